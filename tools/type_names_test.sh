#!/usr/bin/env bash
# Runs check_type_names.py over the workspace the test was built from.
set -euo pipefail
exec python3 "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/check_type_names.py"
