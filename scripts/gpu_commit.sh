#!/usr/bin/env bash
# The commit a GPU contact measures, carried to a device machine that receives the working tree without .git.
#
#   scripts/gpu_commit.sh prepare     (here, in the repository: what travels, and the paths to carry)
#   scripts/gpu_commit.sh restore     (there, before anything runs: .git made from what travelled)
#
# prepare: refuses measured code that differs from HEAD, then writes .gpu-contact/ (git-ignored): a bare, shallow
# clone of HEAD alone (head.git, its one commit with its date and tree) and HEAD's hash (commit); fetches the wheels
# of requirements/h200.txt into TVT_WHEELS (default .whl/) where they are missing; prints the paths a device call
# must carry and their sizes. restore: where the tree has no .git (or one an earlier restore made, of another
# commit), makes .git of head.git with the tree's files as its work tree, so that HEAD is the carried commit and
# every `git rev-parse HEAD` names it; then refuses a tree whose measured code differs from that commit. A
# repository of one's own (a .git that no restore made) is left as it is. Without .git and without .gpu-contact/
# there is no commit to record results under: it refuses, naming the command that prepares one.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
carry=.gpu-contact
wheels=${TVT_WHEELS:-.whl}
marker=.git/tvt-carried  # a .git made by restore, which a later restore may replace

measured() {  # the Makefile's one list of paths whose content measures or records a result
    sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' Makefile 2>/dev/null | sed -n 's/^RECORDED_SOURCES *:= *//p'
}

refuse_changes() {  # $1: what the tree is compared with, for the message
    local paths changed
    read -ra paths <<< "$(measured)"
    [ ${#paths[@]} -gt 0 ] || { echo "error: the Makefile defines no RECORDED_SOURCES"; exit 1; }
    changed=$(git status --porcelain -- "${paths[@]}")
    if [ -n "$changed" ]; then
        echo "error: the measured code differs from $1 ($(echo "$changed" | head -3 | awk '{print $2}' |
              paste -sd' ')$( [ "$(echo "$changed" | wc -l)" -gt 3 ] && echo ' ...')): results are recorded under" \
             "the commit; commit it and run scripts/gpu_bench.sh prepare again"
        exit 1
    fi
}

case "${1:-}" in
prepare)
    [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$root" ] && [ ! -f "$marker" ] ||
        { echo "error: prepare runs in the repository (with its own .git), not on the device"; exit 1; }
    refuse_changes "HEAD"
    head=$(git rev-parse HEAD)
    rm -rf "$carry.tmp" && mkdir -p "$carry.tmp"
    git init -q --bare "$carry.tmp/head.git"
    git -C "$carry.tmp/head.git" fetch -q --depth 1 "file://$root" "HEAD:refs/heads/main"
    git -C "$carry.tmp/head.git" symbolic-ref HEAD refs/heads/main
    [ "$(git -C "$carry.tmp/head.git" rev-parse HEAD)" = "$head" ] ||
        { echo "error: the carried clone does not hold HEAD $head"; exit 1; }
    git -C "$carry.tmp/head.git" gc -q --prune=now 2>/dev/null || true
    echo "$head" > "$carry.tmp/commit"
    rm -rf "$carry" && mv "$carry.tmp" "$carry"
    if ! compgen -G "$wheels/asv-*.whl" >/dev/null; then
        scripts/download_wheels.sh "$wheels" ||
            { echo "error: no wheels in $wheels, and fetching them failed (above)"; exit 1; }
    fi
    echo "prepared: commit ${head:0:8} ($(git show -s --format=%cI HEAD)) in $carry/ ($(du -sh "$carry" | cut -f1));" \
         "wheels in $wheels ($(du -sh "$wheels" | cut -f1))"
    echo "carry: $carry $wheels"
    ;;
restore)
    [ -d "$carry/head.git" ] && carried=$(cat "$carry/commit" 2>/dev/null) || carried=
    top=$(git rev-parse --show-toplevel 2>/dev/null || true)
    if [ "$top" = "$root" ] && [ ! -f "$marker" ]; then
        # A repository of one's own: its HEAD is what is measured; a carried commit of another HEAD is stale.
        if [ -n "$carried" ] && [ "$carried" != "$(git rev-parse HEAD)" ]; then
            echo "note: $carry/ carries ${carried:0:8}, not this repository's HEAD; results are recorded under HEAD"
        fi
    elif [ -n "$carried" ]; then
        if [ "$top" != "$root" ] || [ "$(git rev-parse HEAD)" != "$carried" ]; then
            rm -rf .git
            cp -a "$carry/head.git" .git
            git config core.bare false
            git reset -q  # the index of HEAD; the work tree, the files that travelled, stays as it is
            touch "$marker"
        fi
        echo "commit ${carried:0:8} ($(git show -s --format=%cI HEAD)) restored from $carry/"
    else
        echo "error: no .git and no carried commit: run scripts/gpu_bench.sh prepare in the repository and carry" \
             "$carry (docs/gpu.md); results are recorded under the commit they measure"
        exit 1
    fi
    git rev-parse --verify -q refs/heads/main >/dev/null || git branch main HEAD  # asv.conf.json: branches main
    refuse_changes "commit $(git rev-parse --short=8 HEAD)"
    ;;
*)
    echo "error: unknown command '${1:-}'; valid choices: prepare, restore"
    exit 2
    ;;
esac
