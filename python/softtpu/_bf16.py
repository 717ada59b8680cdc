"""bf16 as numpy sees it: raw bits in softtpu.bfloat16, a uint16 dtype.

numpy has no bfloat16 type. Buffers of element type bf16 therefore read back
as uint16 arrays of dtype softtpu.bfloat16 (uint16 with metadata marking the
bits as bf16), which buffer_from_pyval sends back as bf16. These helpers
convert to and from float32; to_py(bfloat16_as_float32=True) converts on the
way out.
"""

import numpy as np

from softtpu._softtpu import bfloat16

_U32_16 = np.uint32(16)


def bfloat16_to_float32(bits):
    """float32 values of bf16 raw bits (exact: bf16 is f32's upper half)."""
    bits = np.asarray(bits, dtype=np.uint16).astype(np.uint32)
    # np.uint32 operands throughout: numpy 1.x would widen a 0-d array
    # combined with a Python int to int64.
    return np.asarray(bits << _U32_16).view(np.float32)


def float32_to_bfloat16(values):
    """bf16 raw bits (dtype softtpu.bfloat16) of `values`, rounded to
    nearest even, as XLA converts f32 to bf16; NaNs stay (quiet) NaNs."""
    values = np.asarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    upper = bits >> _U32_16
    rounded = (bits + np.uint32(0x7FFF) + (upper & np.uint32(1))) >> _U32_16
    # Rounding could carry a NaN's payload into infinity; quiet it instead.
    quiet_nan = upper | np.uint32(0x0040)
    result = np.where(np.isnan(values), quiet_nan, rounded)
    return np.asarray(result.astype(np.uint16)).view(bfloat16)
