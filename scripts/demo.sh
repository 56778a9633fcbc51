#!/usr/bin/env bash
# Sets up .venv, then runs `rlwrappers demo`: a zoo agent under six kinds of uncertainty, with a report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "classic,sb3,report"
.venv/bin/rlwrappers demo "$@"
