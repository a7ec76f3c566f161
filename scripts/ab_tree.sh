#!/usr/bin/env bash
# The tree of commit REV that `scripts/device_run.sh ab` compiles beside this one, in
# .ab-before/ (ignored by git through .git/info/exclude; name it in the device call's carry):
# dnnc, bench without its results, pyproject.toml.
#   bash scripts/ab_tree.sh REV
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/ab_tree.sh REV}
grep -qx '/.ab-before/' .git/info/exclude 2>/dev/null || echo '/.ab-before/' >> .git/info/exclude
rm -rf .ab-before && mkdir .ab-before
git archive "$rev" dnnc bench pyproject.toml | tar -x -C .ab-before
rm -rf .ab-before/bench/results
echo ".ab-before/ holds $(git rev-parse --short "$rev") ($(du -sh .ab-before | cut -f1))"
