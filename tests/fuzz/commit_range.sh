#!/bin/sh
# The differential fuzzer over a seed range that changes with every commit
# (ctest fuzz_commit_range): the fixed seeds of fuzz_differential find
# nothing new once they pass, while a range derived from the commit id walks
# new seeds on each commit at the same cost. The range is printed first, and
# every seed's replay line before it runs, so a divergence or a crash (an
# assertion, a sanitizer report) names the `fuzz_runner --seed S --ops N`
# that reproduces it.
#
#   commit_range.sh FUZZ_RUNNER SOURCE_DIR SEEDS OPS [RUNNER_ARGS...]
#
# SEEDS seeds share OPS operations: most of them consecutive seeds, a
# quarter the same seeds in the cells variant and an eighth in the twin
# variant (below). The first seed is the first
# 12 hex digits of `git rev-parse HEAD` in SOURCE_DIR (a 48-bit number,
# plus 10^6 to stay clear of the small fixed seeds); without git or outside
# a repository it is a fixed 424242. TES_FUZZ_FIRST_SEED overrides it (to
# rerun the range of another commit).
set -eu
runner=$1
src=$2
seeds=$3
ops=$4
shift 4

if [ -n "${TES_FUZZ_FIRST_SEED:-}" ]; then
  first=$TES_FUZZ_FIRST_SEED
  from="TES_FUZZ_FIRST_SEED"
elif id=$(git -C "$src" rev-parse HEAD 2>/dev/null) && [ ${#id} -ge 12 ]; then
  first=$((0x$(printf '%s' "$id" | cut -c1-12) + 1000000))
  from="commit $(printf '%s' "$id" | cut -c1-12)"
else
  first=424242
  from="no git commit: fixed range"
fi
# A quarter of the seeds and of the ops (at least one seed, when there
# are two or more) go to the cells variant: the same first seed with bit
# 62 set (fz_config_seed in driver.h), so the range costs what it did.
cells=$((seeds / 4))
if [ "$cells" -eq 0 ] && [ "$seeds" -ge 2 ]; then
  cells=1
fi
# One seed in eight (at least one, when there are four or more) runs the
# twin variant: the same first seed with bit 61 set (a deferred world
# against an immediate twin; the runner gives each twin seed an eighth of
# its share of ops, as a twin op is a whole batch of calls).
twin=$((seeds / 8))
if [ "$twin" -eq 0 ] && [ "$seeds" -ge 4 ]; then
  twin=1
fi
plain=$((seeds - cells - twin))
cells_ops=$((ops * cells / seeds))
twin_ops=$((ops * twin / seeds))
plain_ops=$((ops - cells_ops - twin_ops))
twin_first=$((first + 2305843009213693952))
cells_first=$((first + 4611686018427387904))
last=$((first + plain - 1))
echo "fuzz: commit range: seeds $first..$last ($from), $plain_ops ops"
if [ "$cells" -gt 0 ]; then
  echo "fuzz: cells variant: seeds $cells_first..$((cells_first + cells - 1)), $cells_ops ops"
fi
if [ "$twin" -gt 0 ]; then
  echo "fuzz: twin variant: seeds $twin_first..$((twin_first + twin - 1)), $twin_ops ops"
fi
echo "fuzz: rerun the range: TES_FUZZ_FIRST_SEED=$first ctest -R fuzz_commit_range"
status=0
"$runner" --seeds "$plain" --first-seed "$first" --ops "$plain_ops" --announce "$@" || status=$?
if [ "$cells" -gt 0 ]; then
  "$runner" --seeds "$cells" --first-seed "$cells_first" --ops "$cells_ops" --announce "$@" ||
    status=$?
fi
if [ "$twin" -gt 0 ]; then
  "$runner" --seeds "$twin" --first-seed "$twin_first" --ops "$twin_ops" --announce "$@" ||
    status=$?
fi
exit "$status"
