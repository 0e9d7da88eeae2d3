#!/usr/bin/env bash
# Install the pipeline into ./.venv (Python >= 3.11).
#   bash scripts/install.sh          # the pipeline (demo, API backends, DVC)
#   bash scripts/install.sh --test   # + test tools (pytest, headless Chromium, local-model stack on CPU)
# Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1 ;;
    *) echo "usage: bash scripts/install.sh [--test]" >&2; exit 2 ;;
  esac
done

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null

if [ -f requirements.lock ]; then
  # the pinned, reproducible dependency set (regenerate: bash scripts/lock.sh)
  pip install -q -r requirements.lock
  pip install -q --no-deps -e .
else
  pip install -q -e '.[api,test]'
fi

if [ "$want_test" = 1 ]; then
  if [ -f requirements-test.lock ]; then
    pip install -q -r requirements-test.lock
  fi
  if ! command -v chromium >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "note: Debian's chromium is not installed; the browser test of the HTML report will be skipped" >&2
    fi
  fi
fi
echo "installed: $(sabre --version 2>/dev/null || echo sabre) in $(pwd)/.venv"
