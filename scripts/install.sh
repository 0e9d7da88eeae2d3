#!/usr/bin/env bash
# Install the pipeline into ./.venv (Python >= 3.11).
#   bash scripts/install.sh          # the pipeline (demo, API backends, DVC)
#   bash scripts/install.sh --test   # + test tools, local-model stack on CPU, SLURM plugin (in .venv/cluster),
#                                    #   and (as root, with apt-get) chromium, slurm-wlm, munge
#   bash scripts/install.sh --local  # + the local-model stack (transformers, accelerate, torch, torchvision) at the
#                                    #   versions requirements-test.lock pins (CPU, or CUDA GPUs with PyPI's torch)
#   bash scripts/install.sh --gpu    # the pinned GPU environment: vLLM with its torch, torchvision and
#                                    #   transformers (requirements-gpu.lock; Linux x86_64, NVIDIA driver for CUDA 13)
# Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
want_local=0
want_gpu=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1 ;;
    --local) want_local=1 ;;
    --gpu) want_gpu=1 ;;
    *) echo "usage: bash scripts/install.sh [--test] [--local] [--gpu]" >&2; exit 2 ;;
  esac
done
PIP_VERSION=26.3  # resolves the GPU lock from wheel metadata alone (tests/test_lock.py)
# uv installs the CPU locks: it links files from its cache and installs in parallel, where pip
# unpacks every wheel again (~4 GB with --test: about a minute with a warm cache, uv a few seconds)
UV_VERSION=0.13.9

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate

python -m pip install -q "pip==$PIP_VERSION" "uv==$UV_VERSION"
# --system-certs: trust the certificate authorities the system trusts, as pip does (uv's own
# default is a bundled list, which fails behind a proxy or mirror whose CA only the system has)
uv_install() { uv pip install -q --system-certs --python .venv/bin/python "$@"; }
# the pinned, reproducible dependency set (regenerate: bash scripts/lock.sh)
if [ "$want_gpu" = 1 ]; then
  # vLLM pins its torch; this machine's pip constraints (if any) are for CPU machines. pip, the
  # resolver scripts/lock.sh resolved this lock with (tests/test_lock.py checks it resolves to itself)
  PIP_CONSTRAINT=/dev/null pip install -q --no-compile -r requirements-gpu.lock
else
  uv_install -r requirements.lock
fi
uv_install --no-deps -e .
if [ "$want_local" = 1 ] && [ "$want_gpu" = 0 ]; then
  # the transformers backend's extra at the pins of the test lock (which resolves it with the pipeline's
  # own pins: tests/test_lock.py); a bare `pip install -e '.[local]'` takes whatever is newest
  uv_install -e '.[local]' -c requirements-test.lock
fi
# Byte code: pip compiles every file it installs, one at a time, and uv none. The packages just
# installed (the pipeline's; with --gpu, the GPU stack) are compiled here on every core at once, so
# that the pipeline's commands start fast even where PYTHONDONTWRITEBYTECODE=1 stops Python from
# caching what it compiles. The --test stack (torch, transformers, ...) compiles the modules it
# imports on first use (the tests turn caching on). A file written for a newer Python (torch ships
# one) fails to compile, as under pip: skipped.
python -m compileall -q -q -j 0 "$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" || true

if [ "$want_test" = 1 ]; then
  # test tools, the local-model stack on CPU (torch, as requirements-test.lock pins it) and the SLURM executor plugin
  # The SLURM executor plugins go to .venv/cluster, apart from the venv: Snakemake imports every executor
  # plugin it can find at each start, and this one imports pandas (~0.4 s of every `snakemake` command).
  # The SLURM test puts .venv/cluster on PYTHONPATH; to submit to a cluster yourself, run
  # `export PYTHONPATH=$PWD/.venv/cluster` (or pip install -e '.[cluster]').
  plugins='^snakemake-executor-plugin-slurm(-jobstep)?=='
  rest=$(mktemp)
  grep -v -E "$plugins" requirements-test.lock > "$rest"
  uv_install -r "$rest"
  rm -f "$rest"
  pinned=$(grep -E "$plugins" requirements-test.lock)
  if [ "$(cat .venv/cluster/PINS 2>/dev/null)" != "$pinned" ]; then
    rm -rf .venv/cluster
    uv_install --no-deps --target .venv/cluster $pinned
    echo "$pinned" > .venv/cluster/PINS
  fi
  # system packages for the browser test (Debian's chromium) and the real single-node
  # SLURM test (slurm-wlm daemons and munge); tests skip with a reason without them
  need=()
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
  command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
  command -v sbatch >/dev/null 2>&1 || need+=(slurm-client)
  command -v munged >/dev/null 2>&1 || need+=(munge)
  if [ "${#need[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      echo "installing system packages: ${need[*]}"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
      echo "note: not root or no apt-get; missing ${need[*]}: the browser and SLURM tests will be skipped" >&2
    fi
  fi
fi
echo "installed: $(sabre --version 2>/dev/null || echo sabre) in $(pwd)/.venv"
