// Questions about the objects the loader has mapped, for symbol resolution's cold paths (every
// call takes the loader's lock: never on a hot path).
#pragma once

#include <cstdint>

namespace perftracker::preload {

struct LoadedObject {
  uintptr_t lo = 0, hi = 0;    // the span of its PT_LOAD segments
  const char* path = nullptr;  // as the loader has it; "" for the main program
  bool main_program = false;
};

// The object that contains `address`; false if none does (JIT code, an unmapped address).
bool ObjectContaining(const void* address, LoadedObject* object);

// True if `address` lies inside libperftracker.so: forwarding to it would recurse forever.
bool IsOurs(const void* address);

// `name` (of version `version`, or the default one when null) as `object` itself and its
// dependencies resolve it: the scope of a library loaded RTLD_LOCAL. Null if absent or ours.
void* LookupInScopeOf(const char* path, const char* name, const char* version);

// The symbol version of the definition of `name` at `address` (its object's .gnu.version and
// .gnu.version_d, as the loader reads them). kUnversioned: a definition a versioned reference
// would bind to as well; kUnknown: it could not be told.
enum class DefinitionVersion { kUnversioned, kVersioned, kUnknown };
DefinitionVersion VersionOf(const void* address, const char* name, const char** version);

// The first loaded object, in load order, that defines `name` (not the main program, not us).
void* LookupInAnyObject(const char* name, const char* version);

}  // namespace perftracker::preload
