#!/usr/bin/env bash
# The lab's first study on real runs (docs/lab.md, "The noise and elasticity study"):
#   1. noise of RECIPE at 5 minutes: an A/A experiment, seeds 1-4 in arm A and again in arm B, so every
#      seed runs twice (seed spread and pair noise), with its verdict as a check of the protocol;
#   2. elasticity: the same recipe at 2 and 10 minutes (2 seeds each), fitted with the 5-minute runs.
# Each experiment climbs the ladder: cpu-check (the test suite), probe (20 s), smoke (60 s), full.
#
# Usage: scripts/lab_study.sh [CLOCKTRAIN_BINARY]      (default build/release/clocktrain)
# Environment (all optional):
#   LEDGER=lab-study.sqlite   the ledger file          REPORT=lab-study.html   the report
#   RECIPE=cpu-small          the recipe's name (as the ledger keys runs)           DATA=DIR  passed as --data DIR
#   RECIPE_FILE=recipes/RECIPE.toml   the recipe file that `clocktrain run` trains
#   SEEDS="1 2 3 4"           noise seeds              ELASTICITY_SEEDS="1 2"  seeds at 2 and 10 min
#   NOISE_BUDGET=300          ELASTICITY_BUDGETS="120 600"   PROBE_BUDGET=20   SMOKE_BUDGET=60
#   CPU_CHECK="ctest --test-dir BUILD -j2"   the cpu-check command (BUILD: the folder holding the binary)
#   RUN_BINARY=BINARY         the binary whose `run` trains (tests substitute a fake one)
#   DRY_RUN=1                 print the commands instead of running them
# Wall time at the defaults: 8 x 5 min + 2 x 2 min + 2 x 10 min of training, two probes and smokes,
# each run's start-up and evaluation, and the test suite twice: plan for about 90 minutes.
set -euo pipefail

BIN=${1:-build/release/clocktrain}
LEDGER=${LEDGER:-lab-study.sqlite}
REPORT=${REPORT:-lab-study.html}
RECIPE=${RECIPE:-cpu-small}
RECIPE_FILE=${RECIPE_FILE:-recipes/$RECIPE.toml}
SEEDS=${SEEDS:-"1 2 3 4"}
ELASTICITY_SEEDS=${ELASTICITY_SEEDS:-"1 2"}
NOISE_BUDGET=${NOISE_BUDGET:-300}
ELASTICITY_BUDGETS=${ELASTICITY_BUDGETS:-"120 600"}
PROBE_BUDGET=${PROBE_BUDGET:-20}
SMOKE_BUDGET=${SMOKE_BUDGET:-60}
RUN_BINARY=${RUN_BINARY:-$BIN}
DRY_RUN=${DRY_RUN:-}

if [[ -z ${CPU_CHECK:-} ]]; then
  build_dir=$(cd "$(dirname "$BIN")" 2>/dev/null && pwd || true)
  if [[ -z $DRY_RUN && ! -f $build_dir/CTestTestfile.cmake ]]; then
    echo "lab_study.sh: no CTestTestfile.cmake in '$build_dir' (the build folder of $BIN); set CPU_CHECK" >&2
    exit 2
  fi
  CPU_CHECK="ctest --test-dir $build_dir -j2"
fi
if [[ -z $DRY_RUN && ! -x $BIN ]]; then
  echo "lab_study.sh: $BIN is not an executable clocktrain binary" >&2
  exit 2
fi

data_options=()
[[ -n ${DATA:-} ]] && data_options=(--data "$DATA")

# Runs (or with DRY_RUN prints) one command.
step() {
  echo "+ $*" >&2
  [[ -n $DRY_RUN ]] || "$@"
}
lab() { step "$BIN" lab "$@" --ledger "$LEDGER"; }
# lab run EXP ARM RUNG BUDGET SEED
lab_run() {
  step "$BIN" lab run "$1" --arm "$2" --rung "$3" --ledger "$LEDGER" --binary "$RUN_BINARY" -- \
    "$RECIPE_FILE" --budget "$4" --seed "$5" "${data_options[@]}"
}
# Opens an experiment and prints its id (the first line lab propose prints).
propose() {
  if [[ -n $DRY_RUN ]]; then
    echo "+ $BIN lab propose $* --ledger $LEDGER" >&2
    echo "EXP"
    return
  fi
  local output
  output=$("$BIN" lab propose "$@" --ledger "$LEDGER")
  echo "$output" >&2
  echo "${output%%$'\n'*}"
}
# cpu-check, probe and smoke for experiment $1, arm $2.
climb() {
  # shellcheck disable=SC2086  # CPU_CHECK is a command line
  step "$BIN" lab check "$1" --arm "$2" --ledger "$LEDGER" -- $CPU_CHECK
  lab_run "$1" "$2" probe "$PROBE_BUDGET" 1
  lab_run "$1" "$2" smoke "$SMOKE_BUDGET" 1
}

echo "== 1. noise: $RECIPE at $NOISE_BUDGET s, seeds $SEEDS in two identical arms" >&2
noise=$(propose \
  --change "none: $RECIPE at $NOISE_BUDGET s, arms A and B identical (noise study)" \
  --hypothesis "identical arms with the same seeds differ only by run-to-run noise, well below 0.005 bpb" \
  --predict 0 --interval -0.005,0.005 \
  --rule "accept if mean(B) - mean(A) < 0.005 at 95%")
climb "$noise" A
for seed in $SEEDS; do
  for arm in A B; do
    lab_run "$noise" "$arm" full "$NOISE_BUDGET" "$seed"
  done
done
lab noise "$noise"
lab noise --recipe "$RECIPE" --rung full
lab verdict "$noise" || echo "lab_study.sh: the A/A verdict was refused (see above)" >&2

echo "== 2. elasticity: $RECIPE at $ELASTICITY_BUDGETS s (and $NOISE_BUDGET s from part 1)" >&2
read -r short_budget long_budget <<<"$ELASTICITY_BUDGETS"
elasticity=$(propose \
  --change "budget $short_budget s -> $long_budget s for $RECIPE (elasticity study)" \
  --hypothesis "val_bpb falls with ln(steps), and more slowly at longer budgets" \
  --predict -0.1 --interval -0.5,0.0 \
  --rule "accept if mean(long) - mean(short) < 0 at 95%" \
  --declare budget_seconds)
climb "$elasticity" short
for seed in $ELASTICITY_SEEDS; do
  lab_run "$elasticity" short full "$short_budget" "$seed"
  lab_run "$elasticity" long full "$long_budget" "$seed"
done
lab elasticity "$RECIPE" --rung full --speedup 1,2,5,10
lab elasticity "$RECIPE" --rung full --speedup 5 --at-budget "$NOISE_BUDGET"

lab show "$noise"
lab report --out "$REPORT"
echo "== done: ledger $LEDGER, report $REPORT" >&2
