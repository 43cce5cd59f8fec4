// Module definition of _simtorch_C: the two method tables merged into one module.
#include "module.h"

#include <vector>

namespace {

std::vector<PyMethodDef>& Methods() {
  static std::vector<PyMethodDef> methods = [] {
    std::vector<PyMethodDef> all;
    for (PyMethodDef* table : {simtorch::kRuntimeMethods, simtorch::kNcclMethods}) {
      for (PyMethodDef* m = table; m->ml_name; ++m) all.push_back(*m);
    }
    all.push_back({nullptr, nullptr, 0, nullptr});
    return all;
  }();
  return methods;
}

PyModuleDef g_module = {PyModuleDef_HEAD_INIT,
                        "_simtorch_C",
                        "CUDA runtime + NCCL bindings of the simulated training job",
                        -1,
                        nullptr,
                        nullptr,
                        nullptr,
                        nullptr,
                        nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__simtorch_C(void) {
  g_module.m_methods = Methods().data();
  return PyModule_Create(&g_module);
}
