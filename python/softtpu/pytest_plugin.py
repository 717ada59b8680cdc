"""pytest fixtures for code that runs on a TPU: tpu_worker and tpu_backend.

The installed wheel registers this plugin; from a source tree, list it in a
conftest.py: pytest_plugins = ["softtpu.pytest_plugin"].

tpu_worker (session scope) starts a tpu_emulator on a free loopback port,
yields its target ("grpc://127.0.0.1:PORT") and stops it when no test needs
it any more. Choose the worker by indirect parametrization:

    @pytest.mark.parametrize("tpu_worker", [{"chips": 1}], indirect=True)
    def test_small(tpu_backend): ...

A parameter is a dict of tpu_emulator flags ({"chips": 1,
"cores_per_chip": 2}), a list of "--name=value" strings, or a string:
"local" (or "local://?chips=1") for the in-process emulator, which needs no
process. Without a parameter the worker has the default topology (4 chips
of 2 cores).

tpu_backend (session scope) yields a softtpu.TpuClient connected to
tpu_worker; its parametrization therefore selects the backend's worker too.

tpu_worker_factory (session scope) starts further workers, e.g. the hosts
of a grpc+pod:// slice: factory({"pod_hosts": 2, "host_id": 1}). They stop
when the session ends.
"""

import pytest

import softtpu
from softtpu import emulator


def _is_local(param):
    return isinstance(param, str) and param.startswith("local")


@pytest.fixture(scope="session")
def tpu_worker_factory():
    """start(flags) -> softtpu.emulator.Worker; all stop at session end."""
    workers = []

    def start(flags=None):
        worker = emulator.start(flags)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


@pytest.fixture(scope="session")
def tpu_worker(request):
    """The target of a TPU worker; see the module docstring."""
    param = getattr(request, "param", None)
    if _is_local(param):
        yield "local://" if param == "local" else param
        return
    worker = emulator.start(param)
    try:
        yield worker.target
    finally:
        worker.stop()


@pytest.fixture(scope="session")
def tpu_backend(tpu_worker):
    """A softtpu.TpuClient connected to tpu_worker."""
    yield softtpu.TpuClient.Get(tpu_worker)
