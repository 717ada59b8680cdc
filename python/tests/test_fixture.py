"""The pytest plugin itself, and softtpu.emulator.start underneath it."""

import os
import socket

import pytest

import softtpu
from softtpu import emulator



def _accepts_connections(host, port):
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((host, port)) == 0


def test_tpu_worker_is_a_loopback_emulator(request):
    # Outside the conftest's parametrization: the plain, unparametrized form.
    target = request.getfixturevalue("tpu_worker")
    assert target.startswith("grpc://127.0.0.1:")
    host, port = target[len("grpc://"):].rsplit(":", 1)
    assert _accepts_connections(host, int(port))


def test_the_plugin_in_a_session_of_its_own(pytester, monkeypatch):
    # The inner session runs elsewhere: find softtpu where this one does.
    package_root = os.path.dirname(os.path.dirname(softtpu.__file__))
    monkeypatch.setenv("PYTHONPATH", package_root)
    pytester.makepyfile(test_inner="""
        import numpy as np
        import pytest

        def test_backend(tpu_backend, tpu_worker):
            assert tpu_worker.startswith("grpc://")
            x = tpu_backend.buffer_from_pyval(np.arange(3, dtype=np.int32))
            assert x.to_py().tolist() == [0, 1, 2]
            with open("target.txt", "w") as f:
                f.write(tpu_worker)

        @pytest.mark.parametrize("tpu_worker", [{"chips": 1}], indirect=True)
        def test_flags(tpu_backend):
            assert tpu_backend.device_count() == 2

        @pytest.mark.parametrize("tpu_worker", ["local"], indirect=True)
        def test_local(tpu_worker, tpu_backend):
            assert tpu_worker == "local://"
            assert tpu_backend.device_count() == 8
    """)
    result = pytester.runpytest_subprocess("-p", "softtpu.pytest_plugin")
    result.assert_outcomes(passed=3)
    target = (pytester.path / "target.txt").read_text()
    host, port = target[len("grpc://"):].rsplit(":", 1)
    # The session ended, so its worker was stopped.
    assert not _accepts_connections(host, int(port))


def test_start_reports_a_worker_that_cannot_start():
    with pytest.raises(softtpu.TpuError) as error:
        emulator.start({"no_such_flag": 1}, timeout=10)
    assert error.value.code == "UNAVAILABLE"
    assert "no_such_flag" in error.value.message


def test_worker_stops_and_flags_from_a_list():
    with emulator.start(["--chips=1"]) as worker:
        assert softtpu.TpuClient.Get(worker.target).device_count() == 2
    assert worker.process.poll() == 0
