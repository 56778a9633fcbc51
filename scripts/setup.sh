#!/usr/bin/env bash
# Creates .venv (if missing) and installs rlwrappers with the extras given as arguments.
# torch is pinned to the CPU build that pip finds locally, so no resolver fetches gigabytes of CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-classic}"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[${extras}]" 2>&1 \
    | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import rlwrappers" >/dev/null
