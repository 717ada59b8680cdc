"""softtpu.control: the worker's control service seen from Python, and
replicated programs that meet in collectives."""

import gc
import threading
import time

import numpy as np
import pytest

import programs
import softtpu

# Each test gets its own worker: a hang must not leak into other tests.
pytestmark = pytest.mark.parametrize("tpu_worker", [{"chips": 1}],
                                     indirect=True, ids=["grpc"])


def test_replicas_meet_in_an_all_reduce(tpu_worker):
    client = softtpu.TpuClient.Get(tpu_worker)
    executable = client.compile(programs.ALL_REDUCE_SUM, num_replicas=2)
    inputs = [np.array([1, 2, 3, 4], np.float32),
              np.array([0.5, -2, 10, 1e6], np.float32)]
    arguments = [[client.buffer_from_pyval(x, d)]
                 for x, d in zip(inputs, executable.local_devices())]
    results = executable.execute_on_local_devices(arguments)
    for (out,) in results:
        np.testing.assert_array_equal(out.to_py(), inputs[0] + inputs[1])


def test_an_idle_worker_reports_idle_cores(tpu_worker):
    report = softtpu.control(tpu_worker).wait_report()
    assert [c["core"] for c in report["cores"]] == [0, 1]
    assert {c["activity"] for c in report["cores"]} == {"IDLE"}
    assert report["cycles"] == []


def _wait_until(predicate, what):
    # Bounded polling of an external process's state; the bound only keeps a
    # broken worker from hanging the test run.
    for _ in range(500):
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"the worker never reported {what}")


def test_the_wait_report_names_the_missing_replica(tpu_worker):
    # The client stops waiting after 2 s; the programs stay on their cores
    # (and in the report) until the client is closed.
    client = softtpu.TpuClient.Get(tpu_worker, execute_warn_interval=60,
                                   execute_max_time=2)
    devices = client.local_devices()
    # Core 1 runs a program that never ends, so replica 1 of the all-reduce
    # never arrives and replica 0 waits for it.
    spin = client.compile(programs.SPIN_FOREVER, softtpu.CompileOptions(
        device_assignment=[devices[1]]))
    all_reduce = client.compile(programs.ALL_REDUCE_SUM, num_replicas=2)
    errors = []

    def run(fn):
        try:
            fn()
        except softtpu.TpuError as error:
            errors.append(error.code)

    spinner = threading.Thread(target=run, args=(lambda: spin.execute([]),))
    spinner.start()
    ctl = softtpu.control(tpu_worker)
    _wait_until(lambda: ctl.wait_report()["cores"][1]["activity"] == "RUNNING",
                "core 1 running")
    arguments = [[client.buffer_from_pyval(np.zeros(4, np.float32), d)]
                 for d in all_reduce.local_devices()]
    reducer = threading.Thread(target=run, args=(
        lambda: all_reduce.execute_on_local_devices(arguments),))
    reducer.start()

    core0 = _wait_until(
        lambda: next((c for c in ctl.wait_report()["cores"]
                      if c["core"] == 0 and c["activity"] == "WAITING"),
                     None), "core 0 waiting")
    assert core0["program"] == "all_reduce_sum"
    assert core0["kind"] == "all-reduce"
    assert core0["waiting_for"] == [1]
    text = ctl.wait_report_text()
    assert "core 0" in text and "waiting for core 1" in text, text
    assert repr(ctl) == f"softtpu.Control({tpu_worker!r})"

    spinner.join()
    reducer.join()
    assert errors == ["DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED"]
    # Closing the client releases both cores.
    del spin, all_reduce, arguments, client
    gc.collect()
    _wait_until(lambda: {c["activity"] for c in ctl.wait_report()["cores"]}
                == {"IDLE"}, "idle cores after the client closed")


def test_control_errors_carry_codes(tpu_worker):
    with pytest.raises(softtpu.TpuError) as error:
        softtpu.control(tpu_worker).call("NoSuchMethod")
    assert error.value.code == "INVALID_ARGUMENT"
    assert "has no method 'NoSuchMethod'; it has: GetWaitReport" in str(
        error.value)
    with pytest.raises(softtpu.TpuError) as error:
        softtpu.control("local://").wait_report()
    assert error.value.code == "INVALID_ARGUMENT"
    with pytest.raises(softtpu.TpuError) as error:
        softtpu.control("127.0.0.1:1", timeout=5).wait_report()
    assert error.value.code == "UNAVAILABLE"
    assert "127.0.0.1:1 did not answer" in error.value.message
    with pytest.raises(softtpu.TpuError) as error:
        softtpu.control(tpu_worker).call("GetWaitReport", {"history": "x"})
    assert error.value.code == "INVALID_ARGUMENT"
