#!/usr/bin/env bash
# Fuzz smoke for CI (issue 13): builds the fuzz targets with
# --config=fuzz_smoke (clang, libFuzzer, ASan, UBSan, at -O0 so that the
# interpreter builds in minutes) and runs each for FUZZ_SMOKE_SECONDS (default
# 20) on a scratch copy of its seed corpus and regressions. Writes one JUnit
# case per target to the file named by $1, for tools/summarize_tests.py.
# FUZZ_SMOKE_TARGETS names a subset; the seed is fixed (FUZZ_SMOKE_SEED, default
# 1) so that a CI run is repeatable.
set -uo pipefail
cd "$(dirname "$0")/.."

xml=${1:?usage: tools/fuzz_smoke.sh JUNIT_XML}
seconds=${FUZZ_SMOKE_SECONDS:-20}
read -r -a targets <<< "${FUZZ_SMOKE_TARGETS:-hlo_text_fuzzer npy_fuzzer wire_slices_fuzzer hlo_module_fuzzer worker_stream_fuzzer}"

labels=()
for t in "${targets[@]}"; do labels+=("//fuzz:$t"); done
bazel build --config=fuzz_smoke "${labels[@]}"
build_rc=$?
bin=$(bazel info --config=fuzz_smoke bazel-bin 2>/dev/null)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cases=""
failures=0
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  cp fuzz/corpus/"$t"/* "$scratch/$t"/ 2>/dev/null
  cp fuzz/regressions/"$t"/* "$scratch/$t"/ 2>/dev/null
  if [[ $build_rc -ne 0 ]]; then
    rc="build failed"
  else
    "$bin/fuzz/$t" -max_total_time="$seconds" -seed="${FUZZ_SMOKE_SEED:-1}" \
      -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$scratch/$t-" "$scratch/$t" \
      > "$scratch/$t.log" 2>&1
    rc=$?
    grep -E "stat::(number_of_executed_units|average_exec_per_sec)" \
      "$scratch/$t.log" | sed "s/^/fuzz_smoke $t: /"
  fi
  if [[ "$rc" == "0" ]]; then
    cases+="<testcase classname=\"fuzz_smoke\" name=\"$t\"/>"
  else
    failures=$((failures + 1))
    tail -40 "$scratch/$t.log" 2>/dev/null
    cases+="<testcase classname=\"fuzz_smoke\" name=\"$t\"><failure message=\"exit $rc\"/></testcase>"
  fi
done
echo "<testsuites><testsuite name=\"fuzz_smoke\">$cases</testsuite></testsuites>" > "$xml"
[[ $failures -eq 0 ]]
