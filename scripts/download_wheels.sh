#!/usr/bin/env bash
# The wheels an offline GPU machine lacks (requirements/h200.txt: exact pins, no dependency resolution), fetched
# here for its Python (3.12 by default) and platform (manylinux x86_64) into DIR (default: .whl, git-ignored; a
# device contact carries it), for scripts/setup_offline.sh to install there with pip --no-index --no-deps.
#
#   scripts/download_wheels.sh [DIR]        (TVT_WHEEL_PYTHON=3.11 for another Python, e.g. a CPU rehearsal)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.whl}
version=${TVT_WHEEL_PYTHON:-3.12}
pip=(${PYTHON:-python3} -m pip)
"${pip[@]}" --version >/dev/null 2>&1 || { echo "error: ${PYTHON:-python3} has no pip to download with"; exit 1; }
"${pip[@]}" download -q --disable-pip-version-check --only-binary=:all: --no-deps --python-version "$version" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dir" -r requirements/h200.txt || {
    echo "error: pip download of requirements/h200.txt for Python $version failed (above)"; exit 1; }
echo "wheels for Python $version in $dir: $(ls "$dir" | grep -c '\.whl$') files, $(du -sh "$dir" | cut -f1)"
