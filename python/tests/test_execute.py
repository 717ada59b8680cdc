"""Compiling and executing: HLO text and protos, replicas, tuples."""

import numpy as np
import pytest

import programs
import softtpu
from softtpu import _softtpu


def _mlp_reference(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


def test_mlp_from_hlo_text_matches_numpy(tpu_backend):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(shape).astype(np.float32)
            for shape in ((4, 3), (3, 8), (8,), (8, 2), (2,))]
    executable = tpu_backend.compile(programs.MLP)
    buffers = [tpu_backend.buffer_from_pyval(a) for a in args]
    (out,) = executable.execute(buffers)
    assert out.shape == (4, 2)
    np.testing.assert_allclose(out.to_py(), _mlp_reference(*args),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("wrap_in_hlo_proto", [False, True],
                         ids=["HloModuleProto", "HloProto"])
def test_compile_takes_serialized_protos(tpu_backend, wrap_in_hlo_proto):
    serialized = _softtpu._hlo_text_to_proto_for_testing(
        programs.ADD_ONE, wrap_in_hlo_proto)
    assert isinstance(serialized, bytes)
    executable = tpu_backend.compile(serialized)
    (out,) = executable.execute(
        [tpu_backend.buffer_from_pyval(np.float32(41))])
    assert out.to_py() == np.float32(42)


def test_replicated_execution_without_collectives(tpu_backend):
    executable = tpu_backend.compile(programs.REPLICA_ID, num_replicas=4)
    assert executable.num_replicas == 4
    devices = executable.local_devices()
    assert devices == tpu_backend.get_default_device_assignment(4)
    arguments = [[tpu_backend.buffer_from_pyval(
        np.array([r, -r], np.int32), device)]
        for r, device in enumerate(devices)]
    results = executable.execute_on_local_devices(arguments)
    assert len(results) == 4
    for replica, (replica_id, incremented) in enumerate(results):
        assert replica_id.to_py() == replica
        assert replica_id.device() is devices[replica]
        np.testing.assert_array_equal(incremented.to_py(),
                                      [replica + 1, 1 - replica])


def test_compile_options_in_xla_form(tpu_backend):
    options = softtpu.CompileOptions()
    options.executable_build_options.num_replicas = 2
    devices = tpu_backend.local_devices()
    options.device_assignment = [devices[5], devices[2]]
    executable = tpu_backend.compile(programs.REPLICA_ID, options)
    assert executable.local_devices() == [devices[5], devices[2]]
    results = executable.ExecuteOnLocalDevices(
        [[tpu_backend.buffer_from_pyval(np.zeros(2, np.int32), d)]
         for d in executable.local_devices()])
    assert [int(r[0].to_py()) for r in results] == [0, 1]


def test_tuple_arguments_are_packed(tpu_backend):
    options = softtpu.CompileOptions(tuple_arguments=True)
    assert options.parameter_is_tupled_arguments
    executable = tpu_backend.compile(programs.TUPLE_PARAMETER, options)
    a = tpu_backend.buffer_from_pyval(np.array([1, -2], np.float32))
    s = tpu_backend.buffer_from_pyval(np.int32(3))
    (out,) = executable.execute([a, s])
    np.testing.assert_array_equal(out.to_py(), [-1, 2])


def test_tuple_parameters_and_nested_results(tpu_backend):
    executable = tpu_backend.compile(programs.TUPLES)
    t = tpu_backend.buffer_from_pyval(
        (np.array([1, -2], np.float32), np.array([1, 2, 3], np.int32)))
    s = tpu_backend.buffer_from_pyval(np.int32(10))
    inner, scalar = executable.execute([t, s])
    negated, summed = inner.to_py()
    np.testing.assert_array_equal(negated, [-1, 2])
    np.testing.assert_array_equal(summed, [11, 12, 13])
    assert scalar.to_py() == 10


def test_bf16_program(tpu_backend):
    executable = tpu_backend.compile(programs.BF16_DOUBLE)
    x = tpu_backend.buffer_from_pyval(
        softtpu.float32_to_bfloat16([1.5, -3, 0.25]))
    (out,) = executable.execute([x])
    np.testing.assert_array_equal(out.to_py(bfloat16_as_float32=True),
                                  [3, -6, 0.5])


def test_deleted_executable_refuses_to_run(tpu_backend):
    executable = tpu_backend.compile(programs.ADD_ONE)
    x = tpu_backend.buffer_from_pyval(np.float32(1))
    executable.delete()
    with pytest.raises(softtpu.TpuError) as error:
        executable.execute([x])
    assert error.value.code == "FAILED_PRECONDITION"
