"""Waiting for programs: the execute deadline, its warnings, the GIL, and
Ctrl-C on a program that never finishes."""

import gc
import logging
import os
import signal
import threading
import time

import numpy as np
import pytest

import programs
import softtpu

# A spinning program occupies its core until its client closes, so these
# tests get workers of their own.
SPIN_WORKER = {"chips": 1}
pytestmark = pytest.mark.parametrize(
    "tpu_worker", [SPIN_WORKER, "local://?chips=1"], indirect=True,
    ids=["grpc", "local"])


def test_execute_deadline_warns_then_gives_up(tpu_worker, caplog):
    client = softtpu.TpuClient.Get(tpu_worker, execute_warn_interval=0.2,
                                   execute_max_time=1.5)
    spin = client.compile(programs.SPIN_FOREVER)
    # The GIL is released while execute waits: this thread keeps counting.
    counted = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counted.append(1)
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="softtpu"):
        with pytest.raises(softtpu.TpuError) as error:
            spin.execute([])
    elapsed = time.monotonic() - start
    stop.set()
    counter.join()
    assert error.value.code == "DEADLINE_EXCEEDED"
    assert error.value.message == (
        "TPU program took more than 1 seconds to complete.")
    assert 1.5 <= elapsed < 10
    warnings = [r.getMessage() for r in caplog.records if r.name == "softtpu"]
    assert warnings and warnings[0].startswith(
        "TPU Execute is taking a long time.")
    assert len(counted) > 100
    del spin, client, error
    gc.collect()


def test_ctrl_c_interrupts_a_hanging_program(tpu_worker):
    client = softtpu.TpuClient.Get(tpu_worker, execute_max_time=30)
    devices = client.local_devices()
    spin = client.compile(programs.SPIN_FOREVER)
    interrupter = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            spin.execute([])
    finally:
        interrupter.cancel()
    assert time.monotonic() - start < 5

    # The client still works: transfers, even to the spinning core, and
    # programs on the other core.
    value = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(
        client.buffer_from_pyval(value, devices[0]).to_py(), value)
    add_one = client.compile(programs.ADD_ONE, softtpu.CompileOptions(
        device_assignment=[devices[1]]))
    (out,) = add_one.execute([client.buffer_from_pyval(np.float32(1),
                                                       devices[1])])
    assert out.to_py() == np.float32(2)
    # Closing the client stops the spinning program.
    del spin, add_one, out, client
    gc.collect()
