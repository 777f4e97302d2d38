#!/usr/bin/env bash
# The loss model's ladder (docs/lab.md, "The loss model"): trains one depth recipe per point with
# `clocktrain run --practice` (the trusted evaluator's val_bpb on the pinned val set, result.json),
# then fits val_bpb(N, D) to every run with `clocktrain lab fit-loss`. A point is DEPTH:RATIO, the
# model of that depth (docs/model.md, "One dial") trained for RATIO tokens per parameter (the run's
# horizon, run.tokens_per_parameter, with its warmdown at the end as in a timed run). A point whose
# folder already holds a result.json is kept, so the ladder continues where a stopped one ended.
#
# usage: scripts/loss_ladder.sh OUT [DEPTH:RATIO ...]
#   OUT: the ladder's folder: OUT/d<DEPTH>-r<RATIO>/ per run, OUT/loss_model.json (the fit)
#   default points: the CPU ladder of docs/lab.md (2:1.2 2:4 2:12 4:0.3 4:0.9 6:0.06 6:0.18)
# env: BUILD=build/release  THREADS=0 (every core)  SEED=42  CLOCKTRAIN_DATA (default ../shared/data)
#      CACHE=runs/cache (prepared data, shared with clocktrain run)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/loss_ladder.sh OUT [DEPTH:RATIO ...]}
shift
points=("$@")
[ ${#points[@]} -gt 0 ] || points=(2:1.2 4:0.3 6:0.06 2:4 4:0.9 6:0.18 2:12)
build=${BUILD:-build/release}
clocktrain="$build/clocktrain"
[ -x "$clocktrain" ] || { echo "loss_ladder.sh: missing $clocktrain: build first" >&2; exit 1; }
for p in "${points[@]}"; do
  [[ "$p" =~ ^[1-9][0-9]*:[0-9]+(\.[0-9]+)?$ ]] ||
    { echo "loss_ladder.sh: point '$p': expected DEPTH:RATIO, e.g. 4:0.9" >&2; exit 2; }
done
mkdir -p "$out/recipes"
for p in "${points[@]}"; do
  depth=${p%%:*} ratio=${p#*:}
  name="d$depth-r$ratio"
  run="$out/$name"
  if [ -f "$run/result.json" ]; then echo "ladder: $name already run, kept"; continue; fi
  rm -rf "$run"  # a point stopped before its result: run again from the start
  cat > "$out/recipes/$name.toml" <<EOF
# scripts/loss_ladder.sh point $p: depth $depth, trained for $ratio tokens per parameter.
name = "ladder-$name"

[model]
depth = $depth

[run]
run_by = "steps"
tokens_per_parameter = $ratio
seed = ${SEED:-42}

[eval]
every_seconds = 0.0
every_steps = 0

[checkpoint]
every_minutes = 0.0
EOF
  echo "ladder: $name"
  "$clocktrain" run "$out/recipes/$name.toml" --practice --out "$run" --threads "${THREADS:-0}" \
    --cache "${CACHE:-runs/cache}" ${CLOCKTRAIN_DATA:+--data "$CLOCKTRAIN_DATA"} --no-progress
done
"$clocktrain" lab fit-loss "$out"/d*-r*/ --out "$out/loss_model.json"
