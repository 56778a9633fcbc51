#!/usr/bin/env bash
# Sets up .venv with the test extras, then runs lint, type and architecture checks and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "classic,atari,toybox,mujoco,box2d,robotics,minigrid,sb3,zoo,attacks,corruptions,perceptual,multiagent,causal,explain,report,ray,docs,test"
# torchattacks only cross-checks the native attacks; its pin on requests~=2.25 would roll back the rest of the
# environment, so it is installed without its dependencies (torch, numpy and scipy are already there).
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "torchattacks==3.5.1"
# rliable only cross-checks the card's bootstrap intervals. It pins arch<8, and arch<8 does not import under
# pandas 3, which .venv holds, so it lives in a venv of its own with pandas<3.
if [ ! -x .venv-rliable/bin/python ]; then
    python3 -m venv .venv-rliable
fi
.venv-rliable/bin/python -m pip install --quiet --disable-pip-version-check "rliable==1.2.0" "pandas<3"
# The browser tests drive Debian's Chromium through playwright (never `playwright install`: its downloads are not used).
command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
.venv/bin/ruff check rlwrappers envs tests benchmarks examples scripts
.venv/bin/ruff format --check rlwrappers envs tests benchmarks examples scripts
.venv/bin/mypy
.venv/bin/lint-imports
.venv/bin/python scripts/check_architecture.py
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
.venv/bin/python -m pytest -n 2 -q "$@"
