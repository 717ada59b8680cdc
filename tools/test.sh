#!/usr/bin/env bash
# Installs what is missing, builds everything and runs the whole test suite:
# the Bazel tests, then the Python client's pytest suite (python/tests)
# against the package and wheel the build staged. Ends with one line
# "N passed, N failed" counting individual test cases, read from the XML each
# test binary writes and from pytest's JUnit XML.
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

# Debian's interpreter, which has the numpy and pytest the package is built
# for; a python3 earlier on PATH (pyenv) would not.
PYTHON=/usr/bin/python3
pytest_xml_dir=$(mktemp -d)
trap 'rm -rf "$pytest_xml_dir"' EXIT
pytest_xml=()
pytest_rc=0
if [[ $build_rc -eq 0 ]]; then
  bin=$(bazel info bazel-bin 2>/dev/null)
  pytest_xml=("$pytest_xml_dir/pytest.xml")
  PYTHONPATH="$bin/python/pkg" SOFTTPU_WHEEL=$(ls -t "$bin"/python/softtpu-*.whl | head -1) \
    "$PYTHON" -m pytest -q -p no:cacheprovider --junitxml="${pytest_xml[0]}" \
    python/tests
  pytest_rc=$?
  # 5: no tests collected, which is not a failure of the code.
  if [[ $pytest_rc -eq 5 ]]; then pytest_rc=0; fi
fi

# A short libFuzzer run of every fuzz target (tools/fuzz_smoke.sh), one case
# per target; FUZZ_SMOKE=0 skips it. Last, because it builds with clang (into
# its own output tree, bazel-out/k8-opt-fuzz_smoke): about 8 minutes cold on
# two cores, and 20 s per target.
fuzz_xml=()
fuzz_rc=0
if [[ $build_rc -eq 0 && "${FUZZ_SMOKE:-1}" == "1" ]]; then
  fuzz_xml=("$pytest_xml_dir/fuzz_smoke.xml")
  tools/fuzz_smoke.sh "${fuzz_xml[0]}"
  fuzz_rc=$?
fi

bazel query 'tests(//...)' 2>/dev/null |
  python3 tools/summarize_tests.py "$(bazel info bazel-testlogs 2>/dev/null)" \
    "$build_rc" "${pytest_xml[@]}" "${fuzz_xml[@]}"
summary_rc=$?
if [[ $build_rc -ne 0 || $test_rc -ne 0 || $pytest_rc -ne 0 || $fuzz_rc -ne 0 ||
      $summary_rc -ne 0 ]]; then
  exit 1
fi
