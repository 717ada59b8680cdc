"""Every error class reaches Python as TpuError with its canonical code."""

import pickle
import socket

import numpy as np
import pytest

import programs
import softtpu

SMALL_HBM = {"hbm_bytes_per_core": 1 << 20}


def _raises(code, fn, *args, **kwargs):
    with pytest.raises(softtpu.TpuError) as error:
        fn(*args, **kwargs)
    assert error.value.code == code, error.value
    return error.value


def _unused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tpu_error_is_a_runtime_error_with_code_and_message():
    error = softtpu.TpuError("NOT_FOUND", "no such thing")
    assert isinstance(error, RuntimeError)
    assert str(error) == "NOT_FOUND: no such thing"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.message) == ("NOT_FOUND", "no such thing")


def test_invalid_argument(tpu_backend):
    error = _raises("INVALID_ARGUMENT", tpu_backend.compile,
                    "HloModule broken\nENTRY main {")
    assert str(error).startswith("INVALID_ARGUMENT: ")
    error = _raises("INVALID_ARGUMENT", tpu_backend.buffer_from_pyval,
                    np.zeros(2, np.float64))
    assert error.message == (
        "64-bit data types are not yet supported on the TPU driver API. "
        "Convert inputs to float32/int32 before using.")
    error = _raises("INVALID_ARGUMENT", tpu_backend.buffer_from_pyval,
                    np.array(["text"]))
    assert "has no TPU element type" in error.message
    executable = tpu_backend.compile(programs.ADD_ONE)
    error = _raises("INVALID_ARGUMENT", executable.execute, [])
    assert "got 0 arguments but the program takes 1" in error.message
    error = _raises("INVALID_ARGUMENT", tpu_backend.compile,
                    programs.ADD_ONE, softtpu.CompileOptions(
                        device_assignment=[99]))
    assert "bad device_id: 99" in error.message


def test_invalid_argument_for_another_clients_device(tpu_backend):
    other = softtpu.TpuClient.Get("local://")
    error = _raises("INVALID_ARGUMENT", tpu_backend.buffer_from_pyval,
                    np.zeros(2, np.float32), other.devices()[0])
    assert error.message.startswith("Cannot copy value to device 'TPU_0")


def test_invalid_argument_for_an_unknown_scheme():
    error = _raises("INVALID_ARGUMENT", softtpu.TpuClient.Get, "tcp://x:1")
    assert 'Unknown TPU driver scheme "tcp://"' in error.message


def test_unavailable_when_nothing_listens():
    _raises("UNAVAILABLE", softtpu.TpuClient.Get,
            f"grpc://127.0.0.1:{_unused_port()}", connection_timeout=1)


def test_unimplemented(tpu_backend):
    pair = tpu_backend.buffer_from_pyval((np.float32(1), np.float32(2)))
    _raises("UNIMPLEMENTED", pair.copy_to_device,
            tpu_backend.local_devices()[1])
    devices = tpu_backend.local_devices()
    _raises("UNIMPLEMENTED", tpu_backend.compile, programs.ADD_ONE,
            softtpu.CompileOptions(device_assignment=[[devices[0],
                                                       devices[1]]]))


def test_failed_precondition(tpu_backend):
    executable = tpu_backend.compile(programs.ADD_ONE)
    executable.delete()
    _raises("FAILED_PRECONDITION", executable.execute,
            [tpu_backend.buffer_from_pyval(np.float32(0))])


@pytest.mark.parametrize("tpu_worker",
                         [SMALL_HBM, "local://?hbm_bytes_per_core=1048576"],
                         indirect=True, ids=["grpc", "local"])
def test_resource_exhausted(tpu_backend):
    buffer = tpu_backend.buffer_from_pyval(np.zeros(1 << 20, np.float32))
    error = _raises("RESOURCE_EXHAUSTED", buffer.block_host_until_ready)
    assert "Out of HBM on core 0" in error.message


def test_python_type_errors_stay_type_errors(tpu_backend):
    with pytest.raises(TypeError):
        tpu_backend.compile(12)
