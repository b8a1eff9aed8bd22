#!/usr/bin/env bash
# Offline set-up: a .venv that reuses the torch and jax already installed for $PYTHON, with no network.
#
#   PYTHON=python3 DEVICE=cuda TVT_WHEELS=.whl scripts/setup_offline.sh
#
# `make setup` runs it when TVT_OFFLINE=1, or for DEVICE=cuda when $PYTHON already has a CUDA torch and a jax CUDA
# plugin (scripts/jax_cuda.py --preinstalled). It works when $PYTHON is itself a venv: `python -m venv
# --system-site-packages` made from a venv sees the base interpreter's packages, not the parent venv's, so .venv
# gets a .pth that adds every package folder $PYTHON sees (with site.addsitedir, so their own .pth files apply).
# The project goes on sys.path through a .pth as well (no pip install -e: that needs setuptools, which such
# machines may lack), with a `tape-vs-trace` launcher. What $PYTHON lacks of requirements/h200.txt (asv,
# asv-runner and their dependencies, exact pins) is installed from local wheels (scripts/download_wheels.sh) with
# pip --no-index --no-deps --find-links $TVT_WHEELS, and the imports are checked before anything else runs. asv
# needs a git commit on branch `main` (asv.conf.json): a copy without .git gets the commit .gpu-contact/ carries
# (scripts/gpu_commit.sh restore), else one snapshot commit.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
venv=${TVT_VENV:-.venv}
device=${DEVICE:-$(nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo cpu)}
wheels=${TVT_WHEELS:-.whl}
root=$PWD

"$py" -c 'import torch, jax' 2>/dev/null || {
    echo "error: $py cannot import torch and jax: nothing to reuse offline (set PYTHON, or set up with network)"
    exit 1; }
test -x "$venv/bin/python" || "$py" -m venv --without-pip "$venv"
vpy=$root/$venv/bin/python
site=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# Sorted before the parent's folders: this checkout, not another install of the project the parent may hold.
echo "$root" > "$site/_tvt_1_project.pth"
"$py" - "$site/_tvt_2_parent.pth" <<'PY'
import subprocess, sys
# What the parent adds to the bare interpreter's path (-S: no site): its packages, including folders that its own
# .pth files add (a preinstalled framework may live in one).
bare = set(subprocess.run([sys.executable, "-S", "-c", "import sys; print(chr(10).join(sys.path))"],
                          capture_output=True, text=True, check=True).stdout.splitlines())
dirs = [p for p in sys.path if p and p not in bare]
with open(sys.argv[1], "w") as pth:
    pth.write(f"import site; list(map(site.addsitedir, {dirs!r}))\n")
PY
cat > "$venv/bin/tape-vs-trace" <<LAUNCH
#!$vpy
import sys
from tape_vs_trace.cli import main
sys.exit(main())
LAUNCH
chmod +x "$venv/bin/tape-vs-trace"

imports='import asv, asv_runner, json5, importlib_metadata'  # what requirements/h200.txt provides
if ! "$vpy" -c "$imports" 2>/dev/null; then
    "$vpy" -m pip --version >/dev/null 2>&1 || "$vpy" -m ensurepip >/dev/null
    "$vpy" -m pip install -q --disable-pip-version-check --no-index --no-deps --find-links "$wheels" \
        -r requirements/h200.txt || {
        echo "error: asv and its dependencies are missing and not installable from the wheels in $wheels" \
             "(TVT_WHEELS): scripts/download_wheels.sh fetches requirements/h200.txt's"
        exit 1; }
fi
"$vpy" -c "$imports" || { echo "error: after the set-up, $vpy cannot run: $imports"; exit 1; }
if [ ! -x "$venv/bin/asv" ]; then
    printf '#!/bin/sh\nexec "%s" -m asv "$@"\n' "$vpy" > "$venv/bin/asv"
    chmod +x "$venv/bin/asv"
fi

if [ "$(git rev-parse --show-toplevel 2>/dev/null)" != "$root" ] && [ -d .gpu-contact/head.git ]; then
    scripts/gpu_commit.sh restore  # the commit scripts/gpu_bench.sh prepare carried
elif [ "$(git rev-parse --show-toplevel 2>/dev/null)" != "$root" ]; then
    echo "no git repository here: committing a snapshot for asv, which records results under a commit (one no" \
         "other repository has: scripts/gpu_bench.sh prepare carries the real one)"
    git init -q
    git add -A
    git -c user.name=tape-vs-trace -c user.email=tape-vs-trace@localhost commit -q -m "Snapshot for asv"
fi
git rev-parse --verify -q refs/heads/main >/dev/null || git branch main HEAD  # asv.conf.json: "branches": ["main"]

"$vpy" -c 'import torch, jax, tape_vs_trace; print("offline set-up: torch", torch.__version__, "(cuda",
torch.version.cuda, ") jax", jax.__version__)'
rm -f "$venv"/.installed-*
touch "$venv/.installed-$device"
