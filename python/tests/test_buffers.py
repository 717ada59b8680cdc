"""numpy in and out: every element type, tuples, layouts, buffer methods."""

import numpy as np
import pytest

import softtpu

# Every element type the client stores, with values that exercise its range.
ROUND_TRIP_VALUES = [
    np.array([True, False, True]),
    np.array([-128, 0, 127], np.int8),
    np.array([-32768, 1, 32767], np.int16),
    np.array([-2**31, 7, 2**31 - 1], np.int32),
    np.array([0, 1, 255], np.uint8),
    np.array([0, 1, 65535], np.uint16),
    np.array([0, 1, 2**32 - 1], np.uint32),
    np.array([0.5, -np.inf, 65504], np.float16),
    np.array([[1.5, -0.0], [np.nan, 3e38]], np.float32),
    np.array([1 + 2j, -3.5j], np.complex64),
]


@pytest.mark.parametrize("value", ROUND_TRIP_VALUES,
                         ids=lambda v: str(v.dtype))
def test_every_element_type_round_trips_bit_exact(tpu_backend, value):
    buffer = tpu_backend.buffer_from_pyval(value)
    back = buffer.to_py()
    assert back.dtype == value.dtype
    assert back.shape == value.shape
    assert back.tobytes() == value.tobytes()
    assert buffer.shape == value.shape
    assert buffer.dtype == value.dtype


def test_bf16_travels_as_raw_bits(tpu_backend):
    bits = softtpu.float32_to_bfloat16([1.0, -2.5, 3.140625])
    assert bits.dtype == softtpu.bfloat16
    buffer = tpu_backend.buffer_from_pyval(bits)
    assert buffer.xla_shape() == "bf16[3]"
    back = buffer.to_py()
    assert back.dtype == np.uint16
    assert back.dtype.metadata == softtpu.bfloat16.metadata
    np.testing.assert_array_equal(back, bits)
    np.testing.assert_array_equal(
        buffer.to_py(bfloat16_as_float32=True),
        np.array([1.0, -2.5, 3.140625], np.float32))


def test_bf16_conversions_round_to_nearest_even():
    # 1 + 2^-8 lies halfway between two bf16 values: ties go to even.
    halfway = np.float32(1 + 2**-8)
    assert softtpu.float32_to_bfloat16(halfway) == 0x3F80
    assert softtpu.float32_to_bfloat16(np.float32(1 + 3 * 2**-8)) == 0x3F82
    assert np.isnan(softtpu.bfloat16_to_float32(
        softtpu.float32_to_bfloat16(np.float32("nan"))))
    np.testing.assert_array_equal(
        softtpu.bfloat16_to_float32(np.array([0x3F80, 0xC020], np.uint16)),
        [1.0, -2.5])


def test_plain_uint16_stays_u16(tpu_backend):
    buffer = tpu_backend.buffer_from_pyval(np.array([1, 2], np.uint16))
    assert buffer.xla_shape() == "u16[2]"


def test_scalars_and_empty_arrays(tpu_backend):
    scalar = tpu_backend.buffer_from_pyval(np.float32(2.5))
    assert scalar.shape == ()
    assert scalar.to_py() == np.float32(2.5)
    empty = tpu_backend.buffer_from_pyval(np.zeros((0, 3), np.int32))
    assert empty.to_py().shape == (0, 3)


def test_nested_tuples_become_python_tuples(tpu_backend):
    value = (np.arange(3, dtype=np.float32),
             (np.array(7, np.int32), np.array([True])), ())
    buffer = tpu_backend.buffer_from_pyval(value)
    assert buffer.shape == ((3,), ((), (1,)), ())
    assert buffer.dtype == (np.float32, (np.int32, np.bool_), ())
    back = buffer.to_py()
    assert isinstance(back, tuple) and isinstance(back[1], tuple)
    np.testing.assert_array_equal(back[0], value[0])
    assert back[1][0] == 7
    assert back[2] == ()


def test_layouts_numpy_cannot_lend_are_copied(tpu_backend):
    matrix = np.arange(12, dtype=np.int32).reshape(3, 4)
    transposed = matrix.T
    big_endian = np.array([1.5, 2.5], dtype=">f4")
    strided = np.arange(10, dtype=np.float32)[::3]
    for value in (transposed, big_endian, strided):
        back = tpu_backend.buffer_from_pyval(value).to_py()
        np.testing.assert_array_equal(back, value)
        assert back.dtype.isnative


def test_lists_and_python_numbers_go_through_numpy(tpu_backend):
    back = tpu_backend.buffer_from_pyval(
        np.asarray([[1, 2], [3, 4]], np.int32)).to_py()
    np.testing.assert_array_equal(back, [[1, 2], [3, 4]])
    # A Python float is float64, which the TPU driver API does not carry.
    with pytest.raises(softtpu.TpuError) as error:
        tpu_backend.buffer_from_pyval(1.0)
    assert error.value.code == "INVALID_ARGUMENT"
    assert "64-bit data types are not yet supported" in error.value.message


def test_force_copy_reads_the_array_once(tpu_backend):
    value = np.ones(1000, np.float32)
    buffer = tpu_backend.buffer_from_pyval(value, force_copy=True)
    value[:] = 5
    np.testing.assert_array_equal(buffer.to_py(), np.ones(1000, np.float32))


def test_to_py_views_are_read_only_and_shared(tpu_backend):
    buffer = tpu_backend.buffer_from_pyval(np.arange(4, dtype=np.int32))
    first = buffer.to_py()
    with pytest.raises(ValueError):
        first[0] = 9
    second = buffer.to_py()
    np.testing.assert_array_equal(first, second)
    writable = np.array(second)
    writable[0] = 9


def test_devices_placement_and_copies(tpu_backend):
    devices = tpu_backend.local_devices()
    value = np.arange(6, dtype=np.float32)
    buffer = tpu_backend.buffer_from_pyval(value, devices[1])
    assert buffer.device() is devices[1]
    copy = buffer.copy_to_device(devices[2])
    assert copy.device() is devices[2]
    np.testing.assert_array_equal(copy.to_py(), value)
    # The default device is the first local one.
    assert tpu_backend.buffer_from_pyval(value).device() is devices[0]


def test_block_delete_and_is_deleted(tpu_backend):
    buffer = tpu_backend.buffer_from_pyval(np.zeros(3, np.float32))
    buffer.block_host_until_ready()
    buffer.copy_to_host_async()
    assert not buffer.is_deleted()
    buffer.delete()
    assert buffer.is_deleted()
    buffer.delete()  # idempotent
    with pytest.raises(softtpu.TpuError) as error:
        buffer.to_py()
    assert error.value.code == "INVALID_ARGUMENT"
    assert buffer.client is tpu_backend
