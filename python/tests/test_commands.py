"""python3 -m softtpu.emulator and python3 -m softtpu.run."""

import os
import signal
import subprocess
import sys
import time

import numpy as np

import programs
import softtpu


def _wait_for(path, process, timeout=30):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_python_m_softtpu_emulator_serves(tmp_path):
    port_file = tmp_path / "port"
    process = subprocess.Popen(
        [sys.executable, "-m", "softtpu.emulator", "--port=0", "--chips=1",
         f"--port_file={port_file}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(port_file, process)
        port = int(port_file.read_text())
        client = softtpu.TpuClient.Get(f"grpc://127.0.0.1:{port}")
        assert client.device_count() == 2
        del client
    finally:
        # The module execs the emulator, so this signal reaches it directly.
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "SIGINT received" in stderr


def test_python_m_softtpu_run_runs_a_module(tmp_path):
    module = tmp_path / "add_one.hlo"
    module.write_text(programs.ADD_ONE)
    inputs = tmp_path / "in" / "replica_0"
    inputs.mkdir(parents=True)
    np.save(inputs / "arg_0.npy", np.float32(41))
    result = subprocess.run(
        [sys.executable, "-m", "softtpu.run", "--target=local://",
         f"--module={module}", f"--inputs_dir={tmp_path / 'in'}",
         f"--outputs_dir={tmp_path / 'out'}"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert np.load(tmp_path / "out" / "replica_0" / "out_0.npy") == 42
