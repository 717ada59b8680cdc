"""Runs each test that uses a TPU worker against a tpu_emulator process on
loopback and against local://, unless the test picks its worker itself."""

import pytest

pytest_plugins = ["pytester", "softtpu.pytest_plugin"]

# One object per worker kind: pytest shares a session fixture's instance
# between tests whose parameters are the same object.
EMULATOR_PROCESS = None
IN_PROCESS = "local"


def _chooses_worker(metafunc):
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if "tpu_worker" in names:
            return True
    return False


def pytest_generate_tests(metafunc):
    if "tpu_worker" in metafunc.fixturenames and not _chooses_worker(metafunc):
        metafunc.parametrize("tpu_worker", [EMULATOR_PROCESS, IN_PROCESS],
                             indirect=True, ids=["grpc", "local"])
