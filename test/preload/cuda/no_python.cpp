// libperftracker_tsan is built without the CPython family (it interposes dlopen, which TSan's
// start-up cannot meet): in its processes no native call is ever made from Python.
#include "preload/core/python_context.h"

namespace perftracker::preload {

Slot CurrentPythonSlot() { return kNoSlot; }

}  // namespace perftracker::preload
