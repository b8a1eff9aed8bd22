#!/usr/bin/env bash
# The tests under another Python, PyTorch and JAX than .venv's, on this machine's CPU, in a venv of their own under
# .venv-stack/: by default the stack of the GPU machines this suite has run on (Python 3.12, torch 2.11.0 and
# jax 0.11.2, preinstalled there), so that a version's difference shows here before a GPU's minutes are spent on it.
#
#   PYTHON=python3.12 TORCH=2.11.0 JAX=0.11.2 scripts/test_stack.sh [PYTEST_ARGS]   (default: -m "not slow")
#
# Needs network the first time (PyPI's torch is its CUDA build, about 5 GB with its CUDA libraries, which runs on
# a CPU); later runs with the same versions install nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3.12}
torch=${TORCH:-2.11.0}
jax=${JAX:-0.11.2}
version=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")' 2>/dev/null) || {
    echo "error: no Python at '$py' (set PYTHON to a Python 3.11 or later)"; exit 1; }
venv=.venv-stack/py$version-torch$torch-jax$jax
if [ ! -f "$venv/.installed" ]; then
    test -x "$venv/bin/python" || "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$torch" "jax==$jax" -e '.[dev]' \
        -r <(grep -E '^asv' requirements/cpu.txt) || {
        echo "error: could not install torch $torch and jax $jax for Python $version into $venv"; exit 1; }
    touch "$venv/.installed"
fi
"$venv/bin/python" -c 'import sys, torch, jax
print("Python", sys.version.split()[0], "torch", torch.__version__, "jax", jax.__version__)'
if [ $# -eq 0 ]; then set -- -m "not slow"; fi
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -n auto --dist loadfile "$@"
