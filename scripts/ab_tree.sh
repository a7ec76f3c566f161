#!/usr/bin/env bash
# The tree of commit REV that `scripts/device_run.sh ab` compiles beside this one, in
# .ab-NAME/ (NAME defaults to "before"; ignored by git through .git/info/exclude; name it in the
# device call's carry and NAME in $AB_SIDES): dnnc, bench without its results, pyproject.toml.
#   bash scripts/ab_tree.sh REV [NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/ab_tree.sh REV [NAME]}
name=${2:-before}
[ "$name" != after ] || { echo "ab_tree: \"after\" is the working tree itself; pick another NAME"; exit 2; }
grep -qx '/.ab-\*/' .git/info/exclude 2>/dev/null || echo '/.ab-*/' >> .git/info/exclude
rm -rf ".ab-$name" && mkdir ".ab-$name"
git archive "$rev" dnnc bench pyproject.toml | tar -x -C ".ab-$name"
rm -rf ".ab-$name/bench/results"
echo ".ab-$name/ holds $(git rev-parse --short "$rev") ($(du -sh ".ab-$name" | cut -f1))"
