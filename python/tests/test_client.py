"""The client's surface: devices, topology, backends."""

import numpy as np
import pytest

import programs
import softtpu


def test_devices_of_the_default_topology(tpu_backend):
    assert tpu_backend.platform == "tpu"
    assert tpu_backend.device_count() == 8
    assert tpu_backend.local_device_count() == 8
    assert tpu_backend.host_id() == 0
    assert tpu_backend.process_index() == 0
    devices = tpu_backend.devices()
    assert [d.id for d in devices] == list(range(8))
    assert all(d.process_index == 0 for d in devices)
    assert {d.core_on_chip for d in devices} == {0, 1}
    assert all(len(d.coords) == 3 for d in devices)
    assert len(tpu_backend.local_devices()) == 8


def test_device_repr_is_the_references(tpu_backend):
    device = tpu_backend.devices()[3]
    x, y, z = device.coords
    assert repr(device) == (
        f"TpuDevice(id=3, process_index=0, coords=({x},{y},{z}), "
        f"core_on_chip={device.core_on_chip})")
    assert str(device) == "TPU_3"
    assert device.platform == "tpu"


def test_default_device_assignment(tpu_backend):
    local = tpu_backend.local_devices()
    assert tpu_backend.get_default_device_assignment(3) == local[:3]
    assert tpu_backend.get_default_device_assignment(2, 1) == [[local[0]],
                                                              [local[1]]]


@pytest.mark.parametrize("tpu_worker", [{"chips": 1, "cores_per_chip": 2},
                                        "local://?chips=1"],
                         indirect=True, ids=["grpc", "local"])
def test_worker_flags_choose_the_topology(tpu_backend):
    assert tpu_backend.device_count() == 2


def test_backend_create_caches_local_clients():
    first = softtpu.TpuBackend.create(worker="local")
    assert softtpu.TpuBackend.create(worker="local://") is first
    assert softtpu.TpuBackend.create(worker="local", force=True) is not first
    with pytest.raises(ValueError):
        softtpu.TpuBackend.create()


def test_backend_create_connects_to_a_worker(tpu_worker):
    client = softtpu.TpuBackend.create(worker=tpu_worker,
                                       execute_max_time=5.0)
    assert client.device_count() == 8
    assert client.execute_max_time == 5.0
    assert client.execute_warn_interval == 10.0


def test_pod_slice_of_two_workers(tpu_worker_factory):
    hosts = [tpu_worker_factory({"pod_hosts": 2, "host_id": h, "chips": 1})
             for h in (0, 1)]
    target = "grpc+pod://" + ",".join(
        f"{h.host}:{h.port}" for h in hosts)
    client = softtpu.TpuClient.Get(target)
    # The pod driver shows the slice as one host holding every core.
    assert client.device_count() == 4
    assert client.local_device_count() == 4
    executable = client.compile(programs.REPLICA_ID, num_replicas=4)
    arguments = [[client.buffer_from_pyval(np.zeros(2, np.int32), d)]
                 for d in executable.local_devices()]
    results = executable.execute_on_local_devices(arguments)
    assert [int(r[0].to_py()) for r in results] == [0, 1, 2, 3]
