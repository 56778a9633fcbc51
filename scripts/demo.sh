#!/usr/bin/env bash
# Sets up .venv, then runs the end-to-end example: wrap, run, record, load, summarize.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "classic"
.venv/bin/python examples/quickstart.py "$@"
