// The slice of the CPython C API and of CPython's private frame layouts that the CPython hooks
// use, resolved at run time. We never compile against Python.h nor link libpython: the same
// libperftracker.so serves Debian's static /usr/bin/python3 (symbols exported by the executable)
// and pyenv's shared libpython 3.9-3.13, so every function is found with dlsym(RTLD_DEFAULT) and
// the frame layout is chosen from the interpreter's version at run time.
//
// Offsets were measured with offsetof() against each version's own headers (3.9.18, 3.10.13,
// 3.11.2/3.11.7, 3.12.1, 3.13.0; release, non-debug, GIL builds) and cross-checked with
// research/interception.md §1a.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace perftracker::preload::cpython {

// Opaque CPython objects: we only ever hold pointers to them.
struct PyObject;
struct PyThreadState;
struct PyInterpreterState;

// PEP 523: PyFrameObject* (3.9, 3.10) or _PyInterpreterFrame* (3.11+); same ABI either way.
using EvalFrameFn = PyObject* (*)(PyThreadState*, void* frame, int throwflag);
using CFunction = PyObject* (*)(PyObject* self, PyObject* args);
// METH_FASTCALL: positional arguments as a C array (what sys.monitoring callbacks get cheapest).
using FastCFunction = PyObject* (*)(PyObject* self, PyObject* const* args, ssize_t nargs);

// PyMethodDef: unchanged since Python 2.
struct MethodDef {
  const char* name;
  CFunction method;
  int flags;
  const char* doc;
};
inline constexpr int kMethVarargs = 0x1;
inline constexpr int kMethNoargs = 0x4;
inline constexpr int kMethFastcall = 0x80;

// Where a version keeps the things the hooks read without calling Python.
struct FrameLayout {
  int minor = 0;                   // 9..13
  size_t code_offset = 0;          // code object in the evaluated frame (f_code / f_executable)
  size_t previous_offset = 0;      // caller frame (f_back / previous)
  ptrdiff_t owner_offset = -1;     // frame->owner (3.11+), -1 when absent
  size_t tstate_frame_offset = 0;  // tstate->frame (3.9/3.10), ->cframe (3.11/3.12),
                                   // ->current_frame (3.13)
  ptrdiff_t cframe_current_offset = -1;  // _PyCFrame.current_frame (3.11/3.12)
  // PyCodeObject.co_extra (a _PyCodeObjectExtra*: ce_size, then ce_extras[]), read directly on
  // the hot path once verified (cpython_eval.cpp); offsetof() against each version's headers.
  size_t co_extra_offset = 0;
};
inline constexpr int kFrameOwnedByCStack = 3;  // 3.12+: the C entry shim frame, not user code

// Layout for 3.minor; false for a version we do not know.
bool LayoutFor(int minor, FrameLayout* layout);

// True when `object` lies in read-only memory of a loaded image (a const static object, or
// RELRO data), where CPython's own writes (co_extra) would fault: 3.13's `_Py_InitCleanup`
// shim code object is one, and appears on the stack during `__init__` calls. Cold: walks the
// program headers.
bool InReadOnlyImage(const void* object);

struct Api {
  // Present from the start (the constructor resolves them to tell a Python process apart).
  int (*IsInitialized)() = nullptr;
  int (*GILStateCheck)() = nullptr;
  int (*AddPendingCall)(int (*)(void*), void*) = nullptr;
  const char* (*GetVersion)() = nullptr;
  const unsigned long* version_hex = nullptr;  // Py_Version, 3.11+

  // Resolved by ResolveApi() at install time.
  PyInterpreterState* (*InterpreterGet)() = nullptr;
  PyThreadState* (*ThreadStateGet)() = nullptr;
  EvalFrameFn (*GetEvalFrameFunc)(PyInterpreterState*) = nullptr;
  void (*SetEvalFrameFunc)(PyInterpreterState*, EvalFrameFn) = nullptr;
  EvalFrameFn eval_frame_default = nullptr;
  ssize_t (*RequestCodeExtraIndex)(void (*)(void*)) = nullptr;
  int (*CodeGetExtra)(PyObject*, ssize_t, void**) = nullptr;
  int (*CodeSetExtra)(PyObject*, ssize_t, void*) = nullptr;
  PyObject* (*GetAttrString)(PyObject*, const char*) = nullptr;
  const char* (*UnicodeAsUTF8)(PyObject*) = nullptr;
  long (*LongAsLong)(PyObject*) = nullptr;
  void (*IncRef)(PyObject*) = nullptr;
  void (*DecRef)(PyObject*) = nullptr;
  void (*ErrFetch)(PyObject**, PyObject**, PyObject**) = nullptr;
  void (*ErrRestore)(PyObject*, PyObject*, PyObject*) = nullptr;
  void (*ErrClear)() = nullptr;
  PyObject* (*ImportModule)(const char*) = nullptr;
  PyObject* (*CFunctionNewEx)(MethodDef*, PyObject*, PyObject*) = nullptr;
  int (*ListAppend)(PyObject*, PyObject*) = nullptr;
  PyObject* (*TupleGetItem)(PyObject*, ssize_t) = nullptr;
  PyObject* (*DictGetItemString)(PyObject*, const char*) = nullptr;
  PyObject* (*CallMethodObjArgs)(PyObject*, PyObject*, ...) = nullptr;
  PyObject* (*UnicodeFromString)(const char*) = nullptr;
  PyObject* (*LongFromLong)(long) = nullptr;
  PyObject* (*DictNew)() = nullptr;
  PyObject* (*CallObject)(PyObject*, PyObject*) = nullptr;
  PyObject* none = nullptr;         // &_Py_NoneStruct
  const void* code_type = nullptr;  // &PyCode_Type
};

// The process-wide table. Written before the hook is installed, read-only afterwards.
extern Api g_api;

// Resolves the constructor-time subset; false when this process is not a Python interpreter.
bool ResolveBootstrapApi();
// Resolves the rest; false (after one warning) when a function is missing.
bool ResolveApi();
// The interpreter's minor version (3.minor), honouring PERFTRACKER_PY_FORCE_VERSION; -1 if the
// version is not 3.x.
int InterpreterMinorVersion(const char* forced);

// ob_type of a non-debug build (PyObject_HEAD = refcount, type).
inline const void* TypeOf(const PyObject* object) {
  return *reinterpret_cast<const void* const*>(reinterpret_cast<const char*>(object) + 8);
}

template <typename T>
inline T ReadField(const void* base, size_t offset) {
  return *reinterpret_cast<const T*>(static_cast<const char*>(base) + offset);
}

}  // namespace perftracker::preload::cpython
