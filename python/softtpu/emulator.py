"""The bundled tpu_emulator: run it as a command or start one from Python.

  python3 -m softtpu.emulator [--port=8470] [--chips=4] [--cores_per_chip=2]
      [--pod_hosts=1 --host_id=0] ...   (see --help for every flag)

start() launches a worker on a free loopback port and returns once it
serves; the pytest fixture tpu_worker is built on it.
"""

import os
import signal
import subprocess
import tempfile
import time

from softtpu import _binaries
from softtpu.errors import TpuError

# PR_SET_PDEATHSIG: the worker gets SIGTERM when the thread that started it
# exits, so a killed test run leaves no worker behind.
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    import ctypes  # pylint: disable=import-outside-toplevel
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def flag_list(flags):
    """["--name=value", ...] from a dict (True -> "true"; a list or tuple
    repeats the flag, as {"fault": [rule, rule]} does), or a list as is."""
    if flags is None:
        return []
    if isinstance(flags, dict):
        out = []
        for name, value in flags.items():
            for one in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(one, bool):
                    one = "true" if one else "false"
                out.append(f"--{name}={one}")
        return out
    return list(flags)


class Worker:
    """A running tpu_emulator process. Stop it with stop() or `with`."""

    def __init__(self, process, host, port):
        self.process = process
        self.host = host
        self.port = port

    @property
    def target(self):
        """The address a client connects to: grpc://host:port."""
        return f"grpc://{self.host}:{self.port}"

    def stop(self, timeout=10.0):
        """SIGTERM (a graceful shutdown), then SIGKILL after `timeout`."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        return f"Worker({self.target}, pid={self.process.pid})"


def start(flags=None, *, host="127.0.0.1", timeout=30.0, stderr=None):
    """Starts tpu_emulator on a free port of `host` with `flags` (a dict such
    as {"chips": 1} or a list of "--name=value") and waits until it serves.

    Raises TpuError UNAVAILABLE if it exits or does not serve within
    `timeout` seconds; the message quotes its stderr.
    """
    binary = _binaries.path("tpu_emulator")
    with tempfile.TemporaryDirectory(prefix="softtpu-") as scratch:
        port_file = os.path.join(scratch, "port")
        log_path = os.path.join(scratch, "stderr")
        with open(log_path, "wb") as log:
            args = [binary, "--port=0", f"--bind={host}",
                    f"--port_file={port_file}"] + flag_list(flags)
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=stderr if stderr is not None else log,
                preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while not os.path.exists(port_file):
            if process.poll() is not None or time.monotonic() > deadline:
                if process.poll() is None:
                    process.kill()
                process.wait()
                with open(log_path, "rb") as log:
                    output = log.read().decode(errors="replace").strip()
                raise TpuError(
                    "UNAVAILABLE",
                    f"tpu_emulator {' '.join(args[4:])} did not start "
                    f"(exit status {process.returncode}): {output}")
            time.sleep(0.02)
        with open(port_file) as f:
            port = int(f.read())
    return Worker(process, host, port)


if __name__ == "__main__":
    _binaries.exec_main("tpu_emulator")
