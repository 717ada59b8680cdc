"""softtpu: Python client for the software TPU, over numpy.

Mirrors TensorFlow's TPU driver client (tpu_client.py and its
tpu_client_extension), so a script written for it needs only its import
changed:

    import softtpu
    backend = softtpu.TpuBackend.create(worker="grpc://127.0.0.1:8470")
    x = backend.buffer_from_pyval(np.ones((2, 2), np.float32))
    executable = backend.compile(hlo_text)
    (y,) = executable.execute([x])
    print(y.to_py())

Failures raise softtpu.TpuError (a RuntimeError) with .code, e.g.
"INVALID_ARGUMENT". bf16 values are numpy uint16 raw bits of dtype
softtpu.bfloat16 (see bfloat16_to_float32 / float32_to_bfloat16).
python/README.md describes the whole surface.
"""

# errors first: the extension imports it while it initializes.
from softtpu.errors import TpuError
from softtpu import _softtpu
from softtpu._softtpu import (PyTpuBuffer, TpuBuffer, TpuClient, TpuDevice,
                              TpuExecutable, bfloat16)
from softtpu import _compile
from softtpu._compile import CompileOptions
from softtpu._bf16 import bfloat16_to_float32, float32_to_bfloat16
from softtpu.backend import TpuBackend
from softtpu._control import Control, control

__version__ = "0.1.0"

TpuClient.compile = _compile.compile

__all__ = [
    "CompileOptions", "Control", "PyTpuBuffer", "TpuBackend", "TpuBuffer", "TpuClient",
    "TpuDevice", "TpuError", "TpuExecutable", "bfloat16",
    "bfloat16_to_float32", "control", "float32_to_bfloat16",
]
