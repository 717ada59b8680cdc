"""softtpu against the C++ TpuClient it wraps, over local://, in one run.

  bazel build //python:package //python/benchmarks:client_baseline
  PYTHONPATH=bazel-bin/python/pkg /usr/bin/python3 \\
      python/benchmarks/python_client_benchmark.py

Figures (issue 15 goals):
  execute overhead: microseconds per executable.execute([x]) of a scalar
    x + 1, against the C++ Execute; goal ratio <= 1.3. Wall time, and the
    CPU time of all the process's threads, which load from other processes
    sharing the cores distorts less.
  transfer: buffer_from_pyval + to_py of 256 MiB, in GB/s of the one size,
    against the C++ FromLiteral + ToLiteral; goal ratio >= 0.8.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

import softtpu

# The timed program, shared with the C++ side: a scalar f32 x + 1.
ADD_ONE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "add_one.hlo")


def _process_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def execute_microseconds(executable, arguments, executes):
    """(wall, CPU of every thread) microseconds per execute."""
    cpu_start = _process_cpu_seconds()
    start = time.perf_counter()
    for _ in range(executes):
        executable.execute(arguments)
    wall = (time.perf_counter() - start) / executes * 1e6
    return wall, (_process_cpu_seconds() - cpu_start) / executes * 1e6


def transfer_gbps(client, value):
    start = time.perf_counter()
    back = client.buffer_from_pyval(value).to_py()
    elapsed = time.perf_counter() - start
    assert back.nbytes == value.nbytes
    return value.nbytes / elapsed / 1e9


def cpp_figures(baseline, executes, size):
    output = subprocess.run(
        [baseline, f"--module={ADD_ONE}", "--rounds=1",
         f"--executes={executes}",
         f"--transfer_bytes={size}"],
        check=True, capture_output=True, text=True).stdout
    return {name: float(value) for name, value in
            (line.split() for line in output.splitlines())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default=os.path.join(
        "bazel-bin", "python", "benchmarks", "client_baseline"))
    parser.add_argument("--trials", type=int, default=9)
    parser.add_argument("--executes", type=int, default=1000)
    parser.add_argument("--transfer_mib", type=int, default=256)
    args = parser.parse_args()
    size = args.transfer_mib << 20

    client = softtpu.TpuClient.Get("local://")
    with open(ADD_ONE) as f:
        executable = client.compile(f.read())
    arguments = [client.buffer_from_pyval(np.float32(1))]
    value = np.ones(size // 4, np.float32)
    # Untimed: warm the allocators and caches, as C++ does too.
    execute_microseconds(executable, arguments, args.executes // 10)
    transfer_gbps(client, value)
    transfer_gbps(client, value)

    # Python and C++ alternate, so load from other processes on the machine
    # hits both sides of each ratio alike.
    rows = []
    for _ in range(args.trials):
        py_wall, py_cpu = execute_microseconds(executable, arguments,
                                               args.executes)
        py_transfer = transfer_gbps(client, value)
        cpp = cpp_figures(args.baseline, args.executes, size)
        rows.append((py_wall, cpp["execute_us"], py_transfer,
                     cpp["transfer_gbps"], py_cpu, cpp["execute_cpu_us"]))

    def column(i):
        return [row[i] for row in rows]

    # The median ratio of paired trials, and the ratio of the best trials
    # (the intrinsic cost, when other processes share the cores).
    execute = (statistics.median(column(0)), statistics.median(column(1)),
               statistics.median(r[0] / r[1] for r in rows),
               min(column(0)) / min(column(1)))
    transfer = (statistics.median(column(2)), statistics.median(column(3)),
                statistics.median(r[2] / r[3] for r in rows),
                max(column(2)) / max(column(3)))
    cpu = (statistics.median(column(4)), statistics.median(column(5)),
           statistics.median(r[4] / r[5] for r in rows))
    print("execute: python %.1f us, C++ %.1f us; ratio %.2f median, %.2f "
          "best (goal <= 1.3)" % execute)
    print("execute CPU time: python %.1f us, C++ %.1f us; ratio %.2f "
          "median" % cpu)
    print(f"transfer {args.transfer_mib} MiB: " +
          "python %.2f GB/s, C++ %.2f GB/s; ratio %.2f median, %.2f best "
          "(goal >= 0.8)" % transfer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
