#!/usr/bin/env bash
# The GPU suite in one command, for a CUDA machine: set up, calibrate, time a pre-flight of what a process costs
# here, plan the chunks from it, run the benchmarks at the GPU sizes chunk by chunk, check allocator peaks against
# their analytic bounds, and leave the results, the plan and a log in OUTDIR.
#
#   scripts/gpu_bench.sh OUTDIR [quick|full]      (default: quick; TVT_OFFLINE=1 without network)
#
# quick: the most cited benchmarks (scripts/gpu_chunks.py QUICK: the gradient steps of mlp and transformer, eager
#        and compiled, in float32, TF32 and bfloat16; the remat peaks and step times per policy; the custom-backward
#        swiglu; transformer inference), timings in 2 rounds, within TVT_BUDGET_S (default 420 s: 7 minutes, set-up
#        included). A chunk starts only while its estimate fits in what is left, and its timeout never reaches past
#        the budget.
# full:  every benchmark, one chunk per class, most cited first (the remat curve's points are remat.RematCurve_*);
#        no budget.
# After the chunks (worker runner), `tape-vs-trace paired` divides their samples into the paired comparisons and
# the remat curve, with its points' costs, written to OUTDIR/paired (TVT_CURVE=0 leaves it out).
#
# The plan: the pre-flight (python -m tape_vs_trace.preflight, at most TVT_PREFLIGHT_S, default 60 s) times each
# framework's start-up, inputs, builds, compiles and steps into OUTDIR/preflight.json (also .asv/preflight.json, which
# `make bench` reads for its estimate); scripts/gpu_chunks.py estimates every chunk from it (what it did not time
# from stated defaults, marked assumed) and prints the plan. TVT_COSTS=FILE plans from a cost file instead,
# TVT_PREFLIGHT=0 from the defaults.
# Each chunk is one `tape-vs-trace run -b REGEX --rounds 2` (one worker process per framework and round) under its
# own `timeout`; it saves its results after every round, so a chunk cut short loses the round in progress. After
# EVERY chunk the results are scrubbed and copied to OUTDIR. TVT_RUNNER=asv runs each chunk as `asv run -b REGEX`
# instead, the reference path (one process per combination and round, saved only when the run ends, so a chunk
# cut short loses all its results), planned with the same costs.
# Set-up: `make setup DEVICE=cuda`, or scripts/setup_offline.sh with TVT_OFFLINE=1.
# TVT_GPU_BENCHMARKS="regex ..." replaces the profile's chunks (TVT_CHUNK_TIMEOUT_S each, default 600 s). TVT_SETUP=0, TVT_CALIBRATE=0 and
# TVT_PEAKCHECK=0 skip those steps; TVT_PYTHON and TVT_ASV name the interpreter and asv (default: .venv's), TVT_CLI
# the tape-vs-trace command (default: the interpreter's tape_vs_trace.cli), TVT_PAIRED_TIMEOUT_S the remat curve's
# own timeout (default 3600 s).
set -euo pipefail
out=${1:?usage: scripts/gpu_bench.sh OUTDIR [quick|full]}
profile=${2:-quick}
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee "$out/log.txt") 2>&1
start=$(date +%s)
case "$profile" in
    quick) budget=${TVT_BUDGET_S:-420} ;;
    full) budget=${TVT_BUDGET_S:-0} ;;  # 0: no budget
    *) echo "error: unknown profile '$profile'; valid choices: quick, full"; exit 1 ;;
esac
runner=${TVT_RUNNER:-worker}
case "$runner" in
    worker|asv) ;;
    *) echo "error: unknown TVT_RUNNER '$runner'; valid choices: worker, asv"; exit 1 ;;
esac
nvidia-smi || { echo "error: no NVIDIA GPU found (nvidia-smi failed)"; exit 1; }
py=${TVT_PYTHON:-.venv/bin/python}
asv=${TVT_ASV:-.venv/bin/asv}
if [ -n "${TVT_CLI:-}" ]; then tvt=("$TVT_CLI"); else tvt=("$py" -m tape_vs_trace.cli); fi

if [ "${TVT_SETUP:-1}" = 1 ]; then
    if [ "${TVT_OFFLINE:-0}" = 1 ]; then DEVICE=cuda scripts/setup_offline.sh; else make setup DEVICE=cuda; fi
    "$py" - <<'PY'
import jax, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
print("jax", jax.__version__, jax.devices())
assert torch.cuda.is_available() and jax.devices()[0].platform == "gpu", "both frameworks must see the GPU"
PY
fi
export TVT_DEVICE=cuda
python_abs=$(cd "$(dirname "$py")" && pwd)/$(basename "$py")  # the venv's own path, not its symlink's target
machine=$("$py" -m tape_vs_trace.cli machine)  # fails on a bad TVT_TORCH_COMPILE_MODE
echo "machine: $machine, profile: $profile, runner: $runner, budget: ${budget}s (0: none)"
"$py" -c 'from implementations import frameworks as f
print("CUDA graphs:", ", ".join(f"{k} {v}" for k, v in f.graph_settings().items()))'
export TVT_CALIBRATION=$PWD/.asv/calibration.json
export TVT_INPUT_CACHE=$PWD/.asv/inputs  # the GPU sizes' inputs are generated once, not in every process
if [ "${TVT_CALIBRATE:-1}" = 1 ]; then
    timeout 120 "$py" -m tape_vs_trace.cli calibrate --out "$TVT_CALIBRATION" ||
        echo "warning: calibration failed: results will carry no calibration"
fi

copy_out() {  # scrub (merging into the saved file) and copy what is saved so far
    "$py" -m tape_vs_trace.cli scrub-results results >/dev/null
    if [ -d "results/$machine" ]; then
        cp -r "results/$machine" "$out/"
        cp results/benchmarks.json "$out/" 2>/dev/null || true
    fi
}

costs=()
if [ -n "${TVT_COSTS:-}" ]; then
    costs=(--costs "$TVT_COSTS")
elif [ "${TVT_PREFLIGHT:-1}" = 1 ]; then
    preflight_s=${TVT_PREFLIGHT_S:-60}
    if timeout $(( preflight_s + 15 )) "$py" -m tape_vs_trace.preflight --out "$out/preflight.json" \
        --budget-s "$preflight_s"; then
        costs=(--costs "$out/preflight.json")
        mkdir -p .asv && cp "$out/preflight.json" .asv/preflight.json
    else
        echo "warning: the pre-flight failed: the plan uses the stated defaults"
    fi
fi

if [ -n "${TVT_GPU_BENCHMARKS:-}" ]; then
    chunks=$(for regex in $TVT_GPU_BENCHMARKS; do
        printf '%s\t%s\t%s\t%s\t%s\n' "$regex" "${TVT_CHUNK_TIMEOUT_S:-600}" 0 0 "$regex"; done)
else
    # the plan goes to the log (stderr), the chunks to stdout
    chunks=$("$py" scripts/gpu_chunks.py plan "$profile" "${costs[@]}" --runner "$runner" --budget "$budget" \
        --spent $(( $(date +%s) - start )))
fi
status=0
not_run=()
while IFS=$'\t' read -r -u 3 name timeout_s estimate_s rounds regex; do
    [ -n "$name" ] || continue  # no chunk at all: the here-string is one empty line
    if [ "$budget" -gt 0 ]; then
        left=$(( start + budget - $(date +%s) ))
        # A chunk is started only if its estimate fits: one cut short loses a round (under asv, all its results).
        if [ "$left" -lt 20 ] || [ "$left" -lt "$estimate_s" ]; then not_run+=("$name"); continue; fi
        [ "$timeout_s" -le "$left" ] || timeout_s=$left
    fi
    if [ "$runner" = asv ]; then
        attr=()
        [ "$rounds" -eq 0 ] || attr=(-a "rounds=$rounds")
        cmd=("$asv" run --set-commit-hash "$(git rev-parse HEAD)" -b "$regex" -E "existing:$python_abs"
             --machine "$machine" --launch-method spawn --record-samples --show-stderr "${attr[@]}")
        lost="its results are lost (asv saves when a run ends)"
    else
        attr=()
        [ "$rounds" -eq 0 ] || attr=(--rounds "$rounds")
        cmd=("${tvt[@]}" run -b "$regex" "${attr[@]}" --machine "$machine" --results results
             --worker-timeout "$timeout_s")
        lost="the round in progress is lost (tape-vs-trace run saves after every round)"
    fi
    echo "== chunk $name (timeout ${timeout_s}s, estimate ${estimate_s}s${attr[*]:+, ${attr[*]}}): -b '$regex'"
    rc=0
    timeout "$timeout_s" "${cmd[@]}" || rc=$?
    if [ "$rc" -eq 124 ]; then
        echo "chunk $name timed out after ${timeout_s}s: $lost"
    elif [ "$rc" -ne 0 ]; then
        echo "chunk $name: $runner runner exit status $rc (failed benchmarks are recorded as failed)"
    fi
    [ "$rc" -eq 0 ] || status=$rc
    copy_out
    echo "== chunk $name done at $(( $(date +%s) - start ))s; results copied to $out"
done 3<<< "$chunks"

# The paired comparisons and the remat curve: tape-vs-trace paired divides the samples the chunks saved (the curve's
# points are the remat.RematCurve_* chunks), pass by pass, and takes the remat points' costs, under its own timeout;
# an experiment whose points did not all run here is left out and named. asv run's samples are not paired.
if [ "$runner" = worker ] && [ "${TVT_CURVE:-1}" = 1 ]; then
    timeout_s=${TVT_PAIRED_TIMEOUT_S:-3600}
    left=3600  # no budget: always room
    if [ "$budget" -gt 0 ]; then left=$(( start + budget - $(date +%s) )); [ "$timeout_s" -le "$left" ] || timeout_s=$left; fi
    if [ "$left" -ge 20 ]; then
        echo "== paired (timeout ${timeout_s}s): tape-vs-trace paired --results results"
        rc=0
        timeout "$timeout_s" "${tvt[@]}" paired --results results --out "$out/paired" || rc=$?
        if [ "$rc" -eq 124 ]; then
            echo "paired timed out after ${timeout_s}s: no paired CSV (the chunks' results are kept)"
        elif [ "$rc" -ne 0 ]; then
            echo "paired: tape-vs-trace paired exit status $rc"
        fi
        [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || status=$rc  # 1: nothing to pair in what ran, said above
        echo "== paired done at $(( $(date +%s) - start ))s; CSV in $out/paired"
    else
        echo "paired skipped: ${timeout_s}s left of the budget"
    fi
fi
[ "${#not_run[@]}" -eq 0 ] || echo "time budget reached: not run: ${not_run[*]}"

if [ "${TVT_PEAKCHECK:-1}" = 1 ]; then
    left=$(( budget > 0 ? start + budget - $(date +%s) : 1800 ))
    if [ "$left" -ge 60 ]; then
        timeout "$left" "$py" -m tape_vs_trace.gpucheck | tee "$out/peak_check.txt" || status=$?
    else
        echo "peak check skipped: ${left}s left of the budget"
    fi
fi
copy_out
[ -d "results/$machine" ] || { echo "no results were saved for $machine"; status=1; }
echo "wall seconds: $(( $(date +%s) - start ))"
exit "$status"
