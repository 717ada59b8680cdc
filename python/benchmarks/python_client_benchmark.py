"""softtpu against the C++ TpuClient it wraps, over local://.

  bazel build //python:package
  PYTHONPATH=bazel-bin/python/pkg /usr/bin/python3 \\
      python/benchmarks/python_client_benchmark.py

Figures (issue 15 goals):
  execute: microseconds per executable.execute([x]) of a scalar x + 1
    (add_one.hlo), against the C++ Execute loop; goal ratio <= 1.3.
  transfer: buffer_from_pyval + to_py of 256 MiB, in GB/s of the one size,
    against the C++ FromLiteral + ToLiteral; goal ratio >= 0.8.

The C++ side runs in this process (softtpu's benchmark hooks), on the same
client, alternating with the Python side in short batches, so load from
other processes sharing the cores hits both sides of each ratio alike.
Printed: the median of the per-trial ratios and the ratio of the best
trials (the intrinsic cost). A third line times C++ with a 1 us pause after
each execute, about what Python's loop spends between calls: executes slow
down when their caller pauses at all, and that line separates this cost of
the driver from the binding's own.
"""

# About the time Python's loop spends between two executes.
PAUSE_NS = 1000

import argparse
import os
import statistics
import sys
import time

import numpy as np

import softtpu
from softtpu import _softtpu

ADD_ONE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "add_one.hlo")


def python_execute_us(executable, arguments, count):
    start = time.perf_counter()
    for _ in range(count):
        executable.execute(arguments)
    return (time.perf_counter() - start) / count * 1e6


def cpp_execute_us(executable, arguments, count, pause_ns=0):
    seconds = _softtpu._execute_loop_for_benchmark(executable, arguments,
                                                   count, pause_ns)
    return seconds / count * 1e6


def python_transfer_gbps(client, value):
    start = time.perf_counter()
    back = client.buffer_from_pyval(value).to_py()
    elapsed = time.perf_counter() - start
    assert back.nbytes == value.nbytes
    return value.nbytes / elapsed / 1e9


def cpp_transfer_gbps(round_trip, size):
    return size / round_trip.run() / 1e9


def report(name, unit, pairs, lower_is_better):
    python = [p for p, _ in pairs]
    cpp = [c for _, c in pairs]
    best = min if lower_is_better else max
    print(f"{name}: python {statistics.median(python):.2f} {unit}, "
          f"C++ {statistics.median(cpp):.2f} {unit}; ratio "
          f"{statistics.median(p / c for p, c in pairs):.2f} median, "
          f"{best(python) / best(cpp):.2f} best")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=31)
    parser.add_argument("--executes", type=int, default=200)
    parser.add_argument("--transfer_mib", type=int, default=256)
    args = parser.parse_args()
    size = args.transfer_mib << 20

    client = softtpu.TpuClient.Get("local://")
    with open(ADD_ONE) as f:
        executable = client.compile(f.read())
    arguments = [client.buffer_from_pyval(np.float32(1))]
    value = np.ones(size // 4, np.float32)
    cpp_round_trip = _softtpu._RoundTripForBenchmark(client, size)
    # Untimed: warm the allocators and caches on both sides.
    python_execute_us(executable, arguments, args.executes)
    cpp_execute_us(executable, arguments, args.executes)
    for _ in range(2):
        python_transfer_gbps(client, value)
        cpp_transfer_gbps(cpp_round_trip, size)

    executes, paused, transfers = [], [], []
    for trial in range(args.trials):
        # Alternate which side goes first, so neither always follows the
        # other's aftermath.
        order = (0, 1) if trial % 2 == 0 else (1, 0)
        execute = [None, None]
        transfer = [None, None]
        for side in order:
            if side == 0:
                execute[0] = python_execute_us(executable, arguments,
                                               args.executes)
                transfer[0] = python_transfer_gbps(client, value)
            else:
                execute[1] = cpp_execute_us(executable, arguments,
                                            args.executes)
                transfer[1] = cpp_transfer_gbps(cpp_round_trip, size)
        paused.append((execute[0], cpp_execute_us(
            executable, arguments, args.executes, PAUSE_NS)))
        executes.append(tuple(execute))
        transfers.append(tuple(transfer))

    report("execute (goal ratio <= 1.3)", "us", executes, True)
    report("execute against C++ pausing 1 us between calls", "us", paused,
           True)
    report(f"transfer {args.transfer_mib} MiB (goal ratio >= 0.8)", "GB/s",
           transfers, False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
