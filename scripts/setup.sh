#!/usr/bin/env bash
# Creates .venv (if missing) and installs rlwrappers in it, editable, with the extras given as the argument.
# pip takes torch from the machine's local wheels when they satisfy the pins, so nothing large is fetched.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-classic}"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
log=$(mktemp)
if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[${extras}]" >"$log" 2>&1; then
    cat "$log"
    exit 1
fi
rm -f "$log"
