#!/usr/bin/env bash
# Installs what is missing, builds the emulator and starts it with the default
# topology (4 chips x 2 cores, like a v3-8) on 127.0.0.1:8470. Extra arguments
# are passed to tpu_emulator (e.g. --port=0 --chips=2).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
bazel build //tools/tpu_emulator
exec bazel-bin/tools/tpu_emulator/tpu_emulator "$@"
