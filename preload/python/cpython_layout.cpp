// CPython C API resolution and per-version frame layouts (see preload/python/cpython_api.h).
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>

#include "preload/core/log.h"
#include "preload/python/cpython_api.h"

namespace perftracker::preload::cpython {

Api g_api;

namespace {

template <typename T>
bool Resolve(T* out, const char* name, const char* alternative = nullptr) {
  void* p = dlsym(RTLD_DEFAULT, name);
  if (p == nullptr && alternative != nullptr) p = dlsym(RTLD_DEFAULT, alternative);
  *out = reinterpret_cast<T>(p);
  return p != nullptr;
}

}  // namespace

bool LayoutFor(int minor, FrameLayout* layout) {
  FrameLayout l;
  l.minor = minor;
  switch (minor) {
    case 9:
    case 10:  // PyFrameObject: PyObject_VAR_HEAD (24), f_back, f_code; tstate->frame
      l.code_offset = 32;
      l.previous_offset = 24;
      l.tstate_frame_offset = 24;
      l.co_extra_offset = 144;
      break;
    case 11:  // _PyInterpreterFrame: f_func, f_globals, f_builtins, f_locals, f_code, frame_obj,
              // previous, ...; tstate->cframe->current_frame
      l.code_offset = 32;
      l.previous_offset = 48;
      l.owner_offset = 69;
      l.tstate_frame_offset = 56;
      l.cframe_current_offset = 8;
      l.co_extra_offset = 176;
      break;
    case 12:  // f_code first, then previous; _PyCFrame lost its use_tracing byte
      l.code_offset = 0;
      l.previous_offset = 8;
      l.owner_offset = 70;
      l.tstate_frame_offset = 56;
      l.cframe_current_offset = 0;
      l.co_extra_offset = 184;
      break;
    case 13:  // f_executable first; _PyCFrame is gone: tstate->current_frame
      l.code_offset = 0;
      l.previous_offset = 8;
      l.owner_offset = 70;
      l.tstate_frame_offset = 72;
      l.co_extra_offset = 192;
      break;
    default:
      return false;
  }
  *layout = l;
  return true;
}

bool InReadOnlyImage(const void* object) {
  struct Query {
    uintptr_t address;
    bool read_only;
  } query{reinterpret_cast<uintptr_t>(object), false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (q->address < start || q->address >= start + ph.p_memsz) continue;
          if (ph.p_type == PT_GNU_RELRO || (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) == 0)) {
            q->read_only = true;
          }
        }
        return q->read_only ? 1 : 0;
      },
      &query);
  return query.read_only;
}

bool ResolveBootstrapApi() {
  if (!Resolve(&g_api.IsInitialized, "Py_IsInitialized")) return false;
  Resolve(&g_api.GILStateCheck, "PyGILState_Check");
  Resolve(&g_api.AddPendingCall, "Py_AddPendingCall");
  Resolve(&g_api.GetVersion, "Py_GetVersion");
  Resolve(&g_api.version_hex, "Py_Version");
  return g_api.GILStateCheck != nullptr && g_api.GetVersion != nullptr;
}

bool ResolveApi() {
  Api& a = g_api;
  // 3.12 renamed the co_extra functions (PyUnstable_*); older names first, newer as fallback.
  const bool ok =
      Resolve(&a.InterpreterGet, "PyInterpreterState_Get") &&
      Resolve(&a.ThreadStateGet, "PyThreadState_Get") &&
      Resolve(&a.GetEvalFrameFunc, "_PyInterpreterState_GetEvalFrameFunc") &&
      Resolve(&a.SetEvalFrameFunc, "_PyInterpreterState_SetEvalFrameFunc") &&
      Resolve(&a.eval_frame_default, "_PyEval_EvalFrameDefault") &&
      Resolve(&a.RequestCodeExtraIndex, "_PyEval_RequestCodeExtraIndex",
              "PyUnstable_Eval_RequestCodeExtraIndex") &&
      Resolve(&a.CodeGetExtra, "_PyCode_GetExtra", "PyUnstable_Code_GetExtra") &&
      Resolve(&a.CodeSetExtra, "_PyCode_SetExtra", "PyUnstable_Code_SetExtra") &&
      Resolve(&a.GetAttrString, "PyObject_GetAttrString") &&
      Resolve(&a.UnicodeAsUTF8, "PyUnicode_AsUTF8") && Resolve(&a.LongAsLong, "PyLong_AsLong") &&
      Resolve(&a.IncRef, "Py_IncRef") && Resolve(&a.DecRef, "Py_DecRef") &&
      Resolve(&a.ErrFetch, "PyErr_Fetch") && Resolve(&a.ErrRestore, "PyErr_Restore") &&
      Resolve(&a.ErrClear, "PyErr_Clear") && Resolve(&a.ImportModule, "PyImport_ImportModule") &&
      Resolve(&a.CFunctionNewEx, "PyCFunction_NewEx") && Resolve(&a.ListAppend, "PyList_Append") &&
      Resolve(&a.TupleGetItem, "PyTuple_GetItem") &&
      Resolve(&a.DictGetItemString, "PyDict_GetItemString") &&
      Resolve(&a.CallMethodObjArgs, "PyObject_CallMethodObjArgs") &&
      Resolve(&a.UnicodeFromString, "PyUnicode_FromString") &&
      Resolve(&a.LongFromLong, "PyLong_FromLong") && Resolve(&a.DictNew, "PyDict_New") &&
      Resolve(&a.CallObject, "PyObject_CallObject") && Resolve(&a.none, "_Py_NoneStruct") &&
      Resolve(&a.code_type, "PyCode_Type");
  if (!ok) Warn("a CPython API function is missing; Python functions are not recorded");
  return ok;
}

int InterpreterMinorVersion(const char* forced) {
  // PERFTRACKER_PY_FORCE_VERSION ("3.8") lets tests exercise the unknown-version path.
  const char* text = forced != nullptr && *forced ? forced : nullptr;
  if (text == nullptr && g_api.version_hex != nullptr) {
    const unsigned long hex = *g_api.version_hex;
    return (hex >> 24) == 3 ? static_cast<int>((hex >> 16) & 0xff) : -1;
  }
  if (text == nullptr) text = g_api.GetVersion();  // "3.10.13 (main, ...) [GCC 12.2.0]"
  int major = 0;
  int minor = 0;
  if (std::sscanf(text, "%d.%d", &major, &minor) != 2 || major != 3) return -1;
  return minor;
}

}  // namespace perftracker::preload::cpython
