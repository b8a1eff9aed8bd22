#!/usr/bin/env bash
# The GPU suite in one command, for a CUDA machine: set up, run every benchmark at the GPU sizes, check the
# allocator peaks against the analytic expectation, and leave the asv results and a log in OUTDIR.
#
#   scripts/gpu_bench.sh OUTDIR
#
# With network access it installs the CUDA builds (requirements/cuda.txt) into .venv like `make setup DEVICE=cuda`.
# Offline (TVT_OFFLINE=1), it reuses the torch and jax already installed for python3 (a venv with system site
# packages) and installs asv, asv-runner and the project from the wheels in $TVT_WHEELS (default .whl/).
# asv saves results only when a run ends, so the suite runs in chunks (one `-b` pattern each, most cited first) and
# no new chunk starts after TVT_ASV_SECONDS (default 360) of benchmarking, aiming at 8 minutes on one H200 with
# set-up and the peak check; a chunk already running finishes (each benchmark has asv's 600 s timeout), so the
# budget is a target, not a guarantee. Whatever finished is saved. TVT_GPU_BENCHMARKS replaces the list.
set -euo pipefail
out=${1:?usage: scripts/gpu_bench.sh OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
start=$(date +%s)
nvidia-smi || { echo "error: no NVIDIA GPU found (nvidia-smi failed)"; exit 1; }

if [ "${TVT_OFFLINE:-0}" = 1 ]; then
    test -x .venv/bin/python || python3 -m venv --system-site-packages .venv
    .venv/bin/python -m pip install -q --no-index --find-links "${TVT_WHEELS:-.whl}" asv asv-runner
    .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
else
    make setup DEVICE=cuda
fi
.venv/bin/python - <<'PY'
import jax, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
print("jax", jax.__version__, jax.devices())
assert torch.cuda.is_available() and jax.devices()[0].platform == "gpu", "both frameworks must see the GPU"
PY

machine=$(TVT_DEVICE=cuda .venv/bin/tape-vs-trace machine)
echo "machine: $machine"
status=0
deadline=$(( $(date +%s) + ${TVT_ASV_SECONDS:-360} ))
chunks=${TVT_GPU_BENCHMARKS:-"harness Roofline GradStep_mlp GradStep_transformer RematCost_transformer
    RematStep_transformer CustomStep_swiglu CustomMemory ForwardMemory Forward_mlp EngineStep GraphCost
    CompileSeconds RematCost_mlp RematStep_mlp RematCost_lstm RematStep_lstm GradStep_chain GradStep_lstm
    ForwardRecording CustomStep_gmm"}
for chunk in $chunks; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "time budget reached: not run: $chunk and the chunks after it"
        break
    fi
    TVT_DEVICE=cuda .venv/bin/asv run --set-commit-hash "$(git rev-parse HEAD)" -b "$chunk" \
        -E "existing:$PWD/.venv/bin/python" --machine "$machine" --launch-method spawn --show-stderr || status=$?
done
echo "asv exit status: $status (non-zero: some benchmarks failed; they are recorded as failed)"
.venv/bin/tape-vs-trace scrub-results results
TVT_DEVICE=cuda .venv/bin/python -m tape_vs_trace.gpucheck | tee "$out/peak_check.txt" || status=$?
if [ -d "results/$machine" ]; then cp -r "results/$machine" results/benchmarks.json "$out/"; else
    echo "no results were saved for $machine"; status=1; fi
echo "wall seconds: $(( $(date +%s) - start ))"
exit "$status"
