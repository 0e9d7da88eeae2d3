#!/bin/bash
# benchmarks/gpu_check.py on a GPU machine without network (issue 34), from the project's root:
#   bash benchmarks/gpu_check_device.sh --random-arch qwen2_5_vl_7b --max-pixels 1605632 --hf-batch-size 16 \
#     --max-new-tokens 64 --variants --variant-questions 96 --variant-tokens 4 --batch1-questions 32
# It reads, from the ignored folder .gpu/ (carried to the machine): parquet-full/ (the demo questions
# at full size, e.g. 192 of them), whl/*.whl (optional: wheels installed first, e.g. the GPU lock's
# transformers) and code/ (optional: src, benchmarks and tests/fixtures of the branch to measure, when
# the machine receives another checkout). Results go to $OUT (default gpu-out/): gpu_check.json and the logs.
# GPU_CHECK_CPU=1 runs it on this machine's CPU with this environment's python (a smoke test).
set -u
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
T0=$(date +%s)
CODE=$PWD; [ -d .gpu/code/src ] && CODE=$PWD/.gpu/code
export PYTHONPATH=$CODE/src
PY=${PY:-python3}
if [ -z "${GPU_CHECK_CPU:-}" ]; then
  if ls .gpu/whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 3
    export PYTHONPATH=/tmp/site:$PYTHONPATH
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
fi
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"
$PY -m pip list 2>/dev/null | grep -i -E '^vllm ' || echo "vllm: not installed on this machine"
W=${W:-/tmp/gpu-check-work}; mkdir -p "$W"
[ -d "$W/parquet-full" ] || cp -r .gpu/parquet-full "$W/parquet-full" || exit 4
set -o pipefail
timeout "${LIMIT:-540}" $PY "$CODE/benchmarks/gpu_check.py" --backends transformers --workdir "$W" --output "$OUT/gpu_check.json" "$@" 2>&1 | tee "$OUT/gpu_check.log"
rc=$?
echo "rc=$rc after $(( $(date +%s) - T0 )) s"
cp "$W/transformers.log" "$OUT/transformers.log" 2>/dev/null
exit $rc
