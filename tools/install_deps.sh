#!/usr/bin/env bash
# Installs exactly what the build and the tests need, from Debian 12 packages.
# Idempotent and quiet when everything is present: safe to run every time.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap          # Bazel 4.2.3; the build runs fully offline
  g++
  libgrpc++-dev            # gRPC C++ runtime and headers
  protobuf-compiler        # protoc
  protobuf-compiler-grpc   # grpc_cpp_plugin
  libprotobuf-dev
  libabsl-dev              # Abseil (status, strings, synchronization, flags)
  libeigen3-dev            # the interpreter's kernels
  libdnnl-dev              # oneDNN: the interpreter's large f32/bf16 GEMMs
  libxsmm-dev              # libxsmm: the interpreter's small batched GEMMs
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  python3                  # summarizes the test XML in tools/test.sh
  python3-dev              # Python.h for the softtpu extension (python/)
  pybind11-dev
  python3-numpy            # softtpu's arrays; the wheel uses Debian's numpy
  python3-pytest           # python/tests, run by tools/test.sh
  python3-venv             # the wheel test installs into a fresh venv
  openssl                  # tests/e2e/tls_e2e_test makes its certificates
  graphviz                 # dot: renders `tpu_ctl waits --format=dot` (README pictures)
  clang                    # --config=fuzz (tools/fuzz_smoke.sh)
  libclang-rt-14-dev       # libFuzzer, ASan and UBSan runtimes of clang 14
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install_deps: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
