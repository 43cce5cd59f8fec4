"""simtorch: a miniature, torch-shaped training stack on the simulated GPU cluster.

Python code here plays the part of PyTorch's Python layer; `_simtorch_C` plays torch._C and
calls the CUDA runtime and NCCL through their shared libraries. Function names follow PyTorch
(DataLoader.__next__, Module.forward, loss.backward, Optimizer.step) because profilers hook them.
"""

import _simtorch_C as _C  # noqa: F401  (re-exported for the submodules)
