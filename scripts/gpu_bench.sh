#!/usr/bin/env bash
# The GPU suite in short contacts: set up, calibrate, time a pre-flight of what a process costs here, plan the
# chunks that this machine's results for this commit still lack, run them at the GPU sizes chunk by chunk within a
# budget, check allocator peaks against their analytic bounds, and leave at most 8 flat files in OUTDIR.
#
#   scripts/gpu_bench.sh prepare             (in the repository: the commit and wheels a device call carries)
#   scripts/gpu_bench.sh "$OUT" quick         (the profile: quick, the default, or full; TVT_OFFLINE=1 without network)
#
# The device receives the tree without .git: a contact files its results under the commit prepare carried in
# .gpu-contact/ (scripts/gpu_commit.sh), and refuses a tree whose measured code differs from it.
#
# OUTDIR receives: results.tar.gz (results/<machine>/machine.json and this commit's result file, results/paired/'s
# CSV of this run, to unpack at the repository's root: `tar -xzf OUTDIR/results.tar.gz`), benchmarks.json (this
# device's discovery), log.txt, preflight.json and peak_check.txt. A contact resumes: unpack the last contact's
# tarball into the working tree (do not commit it in between: results are kept per commit) and run the same
# command again; each contact runs only the chunks, and of them the combinations, the result file lacks (or holds
# with fewer rounds than the chunk's), the most cited first, says what it skipped and why, and the runner merges
# the new values into the file. k contacts complete the quick profile (`python scripts/gpu_chunks.py estimate`).
#
# quick: the most cited benchmarks (tape_vs_trace/running/profiles.py QUICK), each timed chunk in 3 rounds, within
#        TVT_BUDGET_S (default 510 s, set-up included, 15 % short of the device's 600 s command limit). A chunk too long for one contact is planned in parts; a
#        part starts only while its estimate fits in what is left, and its timeout never reaches past the budget.
# full:  every benchmark, one chunk per class, most cited first; no budget.
# After the chunks (worker runner), `tape-vs-trace paired` divides their samples into the paired comparisons and
# the remat curve (TVT_CURVE=0 leaves it out). The pre-flight (python -m tape_vs_trace.running.preflight, at most
# TVT_PREFLIGHT_S, default 60 s) times each framework's phases; scripts/gpu_chunks.py plans from it and prints the
# plan; TVT_COSTS=FILE plans from an earlier cost file (a first contact's preflight.json), TVT_PREFLIGHT=0 from the
# defaults. A first contact at a commit (no results for it, no TVT_COSTS) runs the chunks the defaults fit first
# and its pre-flight after them, where its budget is left: its phases would repeat their first round. Each chunk
# is one `tape-vs-trace run -b REGEX --rounds 3 --extend` under its own `timeout`; it saves after every round,
# and a later contact adds only the rounds a cut one lacked.
# TVT_RUNNER=asv runs each as `asv run -b REGEX` instead (saved only when a run ends).
# It refuses a tree whose measured code (the Makefile's RECORDED_SOURCES) differs from that commit.
# Set-up: scripts/setup_offline.sh (TVT_OFFLINE=1, or where
# python3 already has a CUDA torch and a jax CUDA plugin; wheels from scripts/download_wheels.sh in TVT_WHEELS), else
# `make setup`. TVT_DEVICE=cpu rehearses the same path on a CPU (CPU sizes, no nvidia-smi).
# TVT_CHUNKS="name ..." runs those chunks of the profile alone, TVT_PLANNED_ONLY=1 only what the plan fits (not
# also what fits in the time actually left: a contact that repeats); TVT_GPU_BENCHMARKS="regex ..." replaces the
# profile's chunks (TVT_CHUNK_TIMEOUT_S each, default 600 s), unplanned. TVT_SETUP=0, TVT_CALIBRATE=0 and
# TVT_PEAKCHECK=0 skip those steps; TVT_PYTHON and TVT_ASV name the interpreter and asv (default: .venv's),
# TVT_CLI the tape-vs-trace command (default: the interpreter's tape_vs_trace.cli), TVT_PAIRED_TIMEOUT_S the
# paired step's own timeout (default 3600 s).
set -euo pipefail
out=${1:?usage: scripts/gpu_bench.sh OUTDIR [quick|full], or scripts/gpu_bench.sh prepare}
profile=${2:-quick}
cd "$(dirname "$0")/.."
[ "$out" != prepare ] || exec scripts/gpu_commit.sh prepare
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee "$out/log.txt") 2>&1
start=$(date +%s)
case "$profile" in
    quick) budget=${TVT_BUDGET_S:-510} ;;  # gpu_chunks.py's QUICK_BUDGET_S: 15 % short of the device's 600 s
    full) budget=${TVT_BUDGET_S:-0} ;;  # 0: no budget
    *) echo "error: unknown profile '$profile'; valid choices: quick, full"; exit 1 ;;
esac
runner=${TVT_RUNNER:-worker}
case "$runner" in
    worker|asv) ;;
    *) echo "error: unknown TVT_RUNNER '$runner'; valid choices: worker, asv"; exit 1 ;;
esac
device=${TVT_DEVICE:-cuda}
case "$device" in
    cuda) nvidia-smi || { echo "error: no NVIDIA GPU found (nvidia-smi failed)"; exit 1; } ;;
    cpu) echo "device cpu: a rehearsal of the GPU path at the CPU sizes" ;;
    *) echo "error: unknown TVT_DEVICE '$device'; valid choices: cuda, cpu"; exit 1 ;;
esac
# The commit measured: this repository's HEAD, or on a device (no .git) the one prepare carried; a tree whose
# measured code (the Makefile's RECORDED_SOURCES) differs from it is refused.
scripts/gpu_commit.sh restore || exit 1
py=${TVT_PYTHON:-.venv/bin/python}
asv=${TVT_ASV:-.venv/bin/asv}
if [ -n "${TVT_CLI:-}" ]; then tvt=("$TVT_CLI"); else tvt=("$py" -m tape_vs_trace.cli); fi

if [ "${TVT_SETUP:-1}" = 1 ]; then
    offline=${TVT_OFFLINE:-}
    if [ -z "$offline" ]; then  # as the Makefile decides: a CUDA python3 that has both frameworks needs no network
        offline=0
        [ "$device" = cuda ] && "${PYTHON:-python3}" scripts/jax_cuda.py --preinstalled >/dev/null 2>&1 && offline=1
    fi
    if [ "$offline" = 1 ]; then
        DEVICE=$device scripts/setup_offline.sh || { echo "error: the offline set-up failed (above)"; exit 1; }
    elif command -v make >/dev/null; then
        make setup DEVICE="$device" || { echo "error: make setup failed (above)"; exit 1; }
    else
        echo "error: no make for an online set-up; TVT_OFFLINE=1 sets up from the installed frameworks"; exit 1
    fi
    # Every import a contact needs, before any GPU work: a missing wheel ends it here, in one line.
    "$py" - "$device" <<'PY' || { echo "error: the set-up's imports or devices are not all there (above)"; exit 1; }
import sys
import asv.benchmarks, asv.results, asv_runner.discovery, importlib_metadata, json5  # noqa: F401
import jax, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "| jax", jax.__version__, jax.devices())
if sys.argv[1] == "cuda":
    assert torch.cuda.is_available() and jax.devices()[0].platform == "gpu", "both frameworks must see the GPU"
    print(torch.cuda.get_device_name(0))
PY
fi
export TVT_DEVICE=$device
commit=$(git rev-parse HEAD)  # the commit restored above: results are filed under it
python_abs=$(cd "$(dirname "$py")" && pwd)/$(basename "$py")  # the venv's own path, not its symlink's target
machine=$("$py" -m tape_vs_trace.cli machine)  # fails on a bad TVT_TORCH_COMPILE_MODE
echo "machine: $machine, profile: $profile, runner: $runner, budget: ${budget}s (0: none), commit: ${commit:0:8}"
"$py" -c 'from implementations import frameworks as f
print("CUDA graphs:", ", ".join(f"{k} {v}" for k, v in f.graph_settings().items()))'
export TVT_CALIBRATION=$PWD/.asv/calibration.json
export TVT_INPUT_CACHE=$PWD/.asv/inputs  # the GPU sizes' inputs are generated once, not in every process
export TVT_COMPILE_CACHE=$PWD/.asv/compile-cache  # later rounds' compiles read it, as under make bench
export TVT_COMPILE_CACHE_STATE=$PWD/.asv/compile-cache-state.json
"$py" -m tape_vs_trace.results.compile_caches "$TVT_COMPILE_CACHE_STATE" ||
    echo "warning: no compile-cache state: results will not say whether the caches were warm"
if [ "${TVT_CALIBRATE:-1}" = 1 ]; then
    timeout 120 "$py" -m tape_vs_trace.cli calibrate --out "$TVT_CALIBRATION" ||
        echo "warning: calibration failed: results will carry no calibration"
fi

result_file=results/$machine/${commit:0:8}-existing-venv.json
stage=.asv/outgoing
copy_out() {  # scrub (merging into the saved file), then this commit's results as one tarball; never fatal
    "$py" -m tape_vs_trace.cli scrub-results results >/dev/null || echo "warning: scrub-results failed (above)"
    [ -d "results/$machine" ] || return 0
    rm -rf "$stage" && mkdir -p "$stage/results/$machine" "$stage/results/paired" &&
        cp "results/$machine/machine.json" "$stage/results/$machine/" &&
        { [ ! -f "$result_file" ] || cp "$result_file" "$stage/results/$machine/"; } &&
        { [ ! -d .asv/paired ] || cp .asv/paired/*.csv "$stage/results/paired/" 2>/dev/null || true; } &&
        tar -czf "$out/results.tar.gz.tmp" -C "$stage" results && mv "$out/results.tar.gz.tmp" "$out/results.tar.gz" &&
        { [ ! -f results/benchmarks.json ] || cp results/benchmarks.json "$out/benchmarks.json"; } ||
        echo "warning: copying the results to $out failed (above); the next chunk goes on"
}

costs=()
[ -z "${TVT_COSTS:-}" ] || costs=(--costs "$TVT_COSTS")
preflight_s=${TVT_PREFLIGHT_S:-60}
preflight() {  # the pre-flight's costs into $out/preflight.json and the plan's --costs; never fatal
    if timeout $(( preflight_s + 15 )) "$py" -m tape_vs_trace.running.preflight --out "$out/preflight.json" \
        --budget-s "$preflight_s"; then
        costs=(--costs "$out/preflight.json")
        mkdir -p .asv && cp "$out/preflight.json" .asv/preflight.json
    else
        echo "warning: the pre-flight failed: the plan uses the stated defaults"
    fi
}
plan() {  # the plan (with what is skipped and why) goes to the log on stderr, the chunks to run to stdout
    "$py" scripts/gpu_chunks.py plan "$profile" "${costs[@]}" --runner "$runner" --budget "$budget" \
        --spent $(( $(date +%s) - start )) --results "$result_file" --commit "$commit" \
        ${TVT_CHUNKS:+--only $TVT_CHUNKS} "$@"
}
status=0
not_run=()
run_chunks() {  # each chunk of $1 (plan's lines) while its estimate fits in what is left of the budget
    local name timeout_s estimate_s rounds regex left attr cmd lost rc
    while IFS=$'\t' read -r -u 3 name timeout_s estimate_s rounds regex; do
        [ -n "$name" ] || continue  # no chunk at all: the here-string is one empty line
        if [ "$budget" -gt 0 ]; then
            left=$(( start + budget - $(date +%s) ))
            # A chunk is started only if its estimate fits: one cut short loses a round (under asv, all its results).
            if [ "$left" -lt 20 ] || [ "$left" -lt "$estimate_s" ]; then not_run+=("$name"); continue; fi
            [ "$timeout_s" -le "$left" ] || timeout_s=$left
        fi
        attr=()
        if [ "$runner" = asv ]; then
            [ "$rounds" -eq 0 ] || attr=(-a "rounds=$rounds")
            cmd=("$asv" run --set-commit-hash "$commit" -b "$regex" -E "existing:$python_abs"
                 --machine "$machine" --launch-method spawn --record-samples --show-stderr "${attr[@]}")
            lost="its results are lost (asv saves when a run ends)"
        else
            [ "$rounds" -eq 0 ] || attr=(--rounds "$rounds")
            cmd=("${tvt[@]}" run -b "$regex" "${attr[@]}" --machine "$machine" --results results --extend
                 --worker-timeout "$timeout_s")
            lost="the round in progress is lost (tape-vs-trace run saves after every round; the next contact adds the rounds missing)"
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
    done 3<<< "$1"
}

if [ -f "$result_file" ]; then
    echo "resuming: $result_file holds this commit's earlier results on $machine"
elif compgen -G "results/$machine/*-existing-venv.json" >/dev/null; then
    echo "note: results/$machine/ holds other commits' results, none of ${commit:0:8}: every chunk is to run"
fi
if [ -n "${TVT_GPU_BENCHMARKS:-}" ]; then
    [ ${#costs[@]} -gt 0 ] || [ "${TVT_PREFLIGHT:-1}" != 1 ] || preflight
    run_chunks "$(for regex in $TVT_GPU_BENCHMARKS; do
        printf '%s\t%s\t%s\t%s\t%s\n' "$regex" "${TVT_CHUNK_TIMEOUT_S:-600}" 0 0 "$regex"; done)"
elif [ ${#costs[@]} -eq 0 ] && [ "${TVT_PREFLIGHT:-1}" = 1 ] && [ "$budget" -gt 0 ] && [ ! -f "$result_file" ]; then
    # A first contact: what the stated defaults fit (the profile's first chunk fits by design) runs before the
    # pre-flight, whose phases would repeat that chunk's first round; the pre-flight then plans the rest, or, with
    # too little left for it, the next contact's start.
    echo "first contact at this commit: the chunks the stated defaults fit run first, then the pre-flight"
    chunks=$(plan --planned-only) || exit 1
    run_chunks "$chunks"
    if [ $(( start + budget - $(date +%s) )) -ge $(( preflight_s + 15 + 20 )) ]; then
        preflight
        chunks=$(plan ${TVT_PLANNED_ONLY:+--planned-only}) || exit 1
        run_chunks "$chunks"
    else
        echo "pre-flight skipped: $(( start + budget - $(date +%s) ))s left of the budget; the next contact runs it"
    fi
else
    [ ${#costs[@]} -gt 0 ] || [ "${TVT_PREFLIGHT:-1}" != 1 ] || preflight
    chunks=$(plan ${TVT_PLANNED_ONLY:+--planned-only}) || exit 1
    run_chunks "$chunks"
fi

# The paired comparisons and the remat curve: tape-vs-trace paired divides the samples the chunks saved, under its
# own timeout; an experiment whose points did not all run here is left out and named. asv run's samples are not
# paired.
if [ "$runner" = worker ] && [ "${TVT_CURVE:-1}" = 1 ]; then
    timeout_s=${TVT_PAIRED_TIMEOUT_S:-3600}
    left=3600  # no budget: always room
    if [ "$budget" -gt 0 ]; then left=$(( start + budget - $(date +%s) )); [ "$timeout_s" -le "$left" ] || timeout_s=$left; fi
    if [ "$left" -ge 20 ]; then
        echo "== paired (timeout ${timeout_s}s): tape-vs-trace paired --results results"
        rc=0
        timeout "$timeout_s" "${tvt[@]}" paired --results results --out .asv/paired || rc=$?
        if [ "$rc" -eq 124 ]; then
            echo "paired timed out after ${timeout_s}s: no paired CSV (the chunks' results are kept)"
        elif [ "$rc" -ne 0 ]; then
            echo "paired: tape-vs-trace paired exit status $rc"
        fi
        [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || status=$rc  # 1: nothing to pair in what ran, said above
        echo "== paired done at $(( $(date +%s) - start ))s; its CSV goes into $out/results.tar.gz"
    else
        echo "paired skipped: ${left}s left of the budget"
    fi
fi
[ "${#not_run[@]}" -eq 0 ] || echo "time budget reached: not run: ${not_run[*]} (the next contact resumes there)"

if [ "${TVT_PEAKCHECK:-1}" = 1 ]; then
    left=$(( budget > 0 ? start + budget - $(date +%s) : 1800 ))
    if [ "$left" -ge 60 ]; then
        timeout "$left" "$py" -m tape_vs_trace.side.gpucheck > "$out/peak_check.txt" || status=$?
        cat "$out/peak_check.txt"
    else
        echo "peak check skipped: ${left}s left of the budget"
    fi
fi
copy_out
[ -d "results/$machine" ] || { echo "no results were saved for $machine"; status=1; }
echo "in $out: $(cd "$out" && ls | tr '\n' ' ')"
echo "wall seconds: $(( $(date +%s) - start ))"
exit "$status"
