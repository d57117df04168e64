#!/usr/bin/env bash
# GPU check: run the whole single-machine benchmark suite on CUDA and keep the result.
#   scripts/gpu_check.sh [--quick]      -> data/measured/gpu_check_<host>.json
# matmul bf16/fp16/fp8/fp32/tf32 vs the catalog peak, HBM copy/triad, h2d/d2h pinned vs pageable,
# the timer harness check, an NCCL all_reduce sweep when >= 2 GPUs, and the memory validation of both
# reference layouts (GPT, Llama) against torch.cuda.max_memory_allocated: replay, planning model, Megatron,
# and KV-cache prefill/decode of a 1.6B reference shape against the roofline from the measured rates (issue 11).
# Bounded by GPU_CHECK_TIMEOUT seconds (default 600); exit 124 means it ran out of time.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python
HOST="$(hostname -s 2>/dev/null || hostname)"
OUT="data/measured/gpu_check_${HOST}.json"
mkdir -p data/measured
export TQDM_DISABLE="${TQDM_DISABLE:-1}"
# the suite stops itself 90 s before the outer limit and writes what it measured: a spawned section may run
# past the suite's deadline by its start-up allowance (gpukit.bench.launch: 30 s + 5 s per rank)
timeout --kill-after=30 "${GPU_CHECK_TIMEOUT:-600}" \
  "$PY" -m gpukit bench all --device cuda --timeout "$(( ${GPU_CHECK_TIMEOUT:-600} - 90 ))" --out "$OUT" "$@"
echo "wrote $OUT"
