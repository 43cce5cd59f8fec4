#include "preload/core/loaded_objects.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <iterator>

#include "preload/core/symbols.h"

namespace perftracker::preload {
namespace {

struct Search {
  uintptr_t address;
  LoadedObject* object;
  bool found;
};

// The span of an object's PT_LOAD segments.
void Span(const dl_phdr_info* info, uintptr_t* lo, uintptr_t* hi) {
  *lo = UINTPTR_MAX;
  *hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (start < *lo) *lo = start;
    if (start + ph.p_memsz > *hi) *hi = start + ph.p_memsz;
  }
}

int FindContaining(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  uintptr_t lo, hi;
  Span(info, &lo, &hi);
  if (search->address < lo || search->address >= hi) return 0;
  search->object->lo = lo;
  search->object->hi = hi;
  search->object->path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  // The first entry is the main program (its name is empty), whose scope is the global one.
  search->object->main_program = search->object->path[0] == '\0';
  search->found = true;
  return 1;
}

void* Lookup(void* handle, const char* name, const char* version) {
  void* p = version != nullptr ? dlvsym(handle, name, version) : dlsym(handle, name);
  return p != nullptr && !IsOurs(p) ? p : nullptr;
}

// Paths of loaded objects, collected under the loader's lock and looked up after it is released
// (dlopen inside dl_iterate_phdr's callback could wait for the lock the walk holds).
struct Paths {
  const char* path[512];
  int count = 0;
};

int CollectPath(dl_phdr_info* info, size_t, void* data) {
  auto* paths = static_cast<Paths*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0') return 0;  // the main program: the global scope
  uintptr_t lo, hi;
  Span(info, &lo, &hi);
  const auto ours = reinterpret_cast<uintptr_t>(&CollectPath);
  if (ours >= lo && ours < hi) return 0;
  paths->path[paths->count++] = path;
  return paths->count == static_cast<int>(std::size(paths->path)) ? 1 : 0;
}

// A dynamic-section address: glibc relocates them in place where the section is writable (x86-64,
// aarch64), other ports leave them relative to the load address.
template <typename T>
const T* DynamicPointer(const link_map* map, ElfW(Addr) value) {
  return reinterpret_cast<const T*>(value < map->l_addr ? value + map->l_addr : value);
}

}  // namespace

DefinitionVersion VersionOf(const void* address, const char* name, const char** version) {
  Dl_info info{};
  void* entry = nullptr;
  void* map_entry = nullptr;
  if (dladdr1(address, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr ||
      dladdr1(address, &info, &map_entry, RTLD_DL_LINKMAP) == 0 || map_entry == nullptr) {
    return DefinitionVersion::kUnknown;
  }
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  const auto* map = static_cast<const link_map*>(map_entry);
  if (map->l_ld == nullptr) return DefinitionVersion::kUnknown;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Half)* versym = nullptr;
  const ElfW(Verdef)* verdef = nullptr;
  for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = DynamicPointer<ElfW(Sym)>(map, d->d_un.d_ptr);
    if (d->d_tag == DT_STRTAB) strtab = DynamicPointer<char>(map, d->d_un.d_ptr);
    if (d->d_tag == DT_VERSYM) versym = DynamicPointer<ElfW(Half)>(map, d->d_un.d_ptr);
    if (d->d_tag == DT_VERDEF) verdef = DynamicPointer<ElfW(Verdef)>(map, d->d_un.d_ptr);
  }
  // dladdr names one symbol at the address: it must be `name` itself, not an alias.
  if (symtab == nullptr || strtab == nullptr || sym < symtab ||
      std::strcmp(strtab + sym->st_name, name) != 0) {
    return DefinitionVersion::kUnknown;
  }
  if (versym == nullptr) return DefinitionVersion::kUnversioned;
  const ElfW(Half) index = versym[sym - symtab] & 0x7fff;
  if (index <= 1) return DefinitionVersion::kUnversioned;  // local or global: no version
  for (const ElfW(Verdef)* v = verdef; v != nullptr;
       v = v->vd_next != 0 ? reinterpret_cast<const ElfW(Verdef)*>(
                                 reinterpret_cast<const char*>(v) + v->vd_next)
                           : nullptr) {
    if (v->vd_ndx != index) continue;
    const auto* aux =
        reinterpret_cast<const ElfW(Verdaux)*>(reinterpret_cast<const char*>(v) + v->vd_aux);
    *version = strtab + aux->vda_name;
    return DefinitionVersion::kVersioned;
  }
  return DefinitionVersion::kUnknown;
}

bool ObjectContaining(const void* address, LoadedObject* object) {
  Search search{reinterpret_cast<uintptr_t>(address), object, false};
  dl_iterate_phdr(&FindContaining, &search);
  return search.found;
}

bool IsOurs(const void* address) {
  Dl_info mine{}, theirs{};
  if (dladdr(reinterpret_cast<void*>(&IsOurs), &mine) == 0) return false;
  if (dladdr(address, &theirs) == 0) return false;
  return mine.dli_fbase == theirs.dli_fbase;
}

void* LookupInScopeOf(const char* path, const char* name, const char* version) {
  // NOLOAD never loads anything; it finds the object by the path the loader recorded.
  void* handle = RealDlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* p = Lookup(handle, name, version);
  dlclose(handle);  // drops the reference NOLOAD took; the object stays loaded
  return p;
}

void* LookupInAnyObject(const char* name, const char* version) {
  Paths paths;
  dl_iterate_phdr(&CollectPath, &paths);
  for (int i = 0; i < paths.count; ++i) {
    if (void* p = LookupInScopeOf(paths.path[i], name, version)) return p;
  }
  return nullptr;
}

}  // namespace perftracker::preload
