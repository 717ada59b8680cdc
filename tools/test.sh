#!/usr/bin/env bash
# Installs what is missing, builds everything and runs the whole test suite.
# Ends with one line "N passed, N failed" counting individual test cases, read
# from the XML each test binary writes.
set -uo pipefail
cd "$(dirname "$0")/.."

tools/install_deps.sh || { echo "install_deps failed"; echo "0 passed, 1 failed"; exit 1; }

# Everything must build, benchmarks and tools included, before tests run.
bazel build //... 
build_rc=$?
test_rc=0
if [[ $build_rc -eq 0 ]]; then
  bazel test --local_test_jobs=2 //... "$@"
  test_rc=$?
fi

bazel query 'tests(//...)' 2>/dev/null |
  python3 tools/summarize_tests.py "$(bazel info bazel-testlogs 2>/dev/null)" "$build_rc"
summary_rc=$?
if [[ $build_rc -ne 0 || $test_rc -ne 0 || $summary_rc -ne 0 ]]; then
  exit 1
fi
