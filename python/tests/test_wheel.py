"""The wheel installs into a fresh venv that uses Debian's numpy."""

import os
import subprocess
import sys

import pytest

WHEEL = os.environ.get("SOFTTPU_WHEEL")

CHECK = """
import importlib.metadata, sys
import numpy as np
import softtpu
from softtpu import emulator
assert softtpu.__file__.startswith(sys.prefix), softtpu.__file__
plugins = [e.value for e in importlib.metadata.entry_points(group="pytest11")]
assert "softtpu.pytest_plugin" in plugins, plugins
with emulator.start({"chips": 1}) as worker:
    client = softtpu.TpuClient.Get(worker.target)
    executable = client.compile(
        "HloModule m\\nENTRY e {\\n x = f32[] parameter(0)\\n"
        " ROOT y = f32[] add(x, x)\\n}\\n")
    (y,) = executable.execute([client.buffer_from_pyval(np.float32(21))])
    print("result", y.to_py())
"""


@pytest.mark.skipif(not WHEEL, reason="set SOFTTPU_WHEEL to the built wheel "
                    "(tools/test.sh does: bazel build //python:wheel)")
def test_wheel_installs_into_a_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                    str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python3")
    # Without PYTHONPATH, so the venv cannot see the source tree's package.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([python, "-m", "pip", "install", "--no-index", "--quiet",
                    WHEEL], check=True, env=env, timeout=300)
    result = subprocess.run([python, "-c", CHECK], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "result 42.0"
