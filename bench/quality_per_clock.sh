#!/usr/bin/env bash
# Quality per clock: given BUDGET seconds of training clock on this machine, which gives the lower
# val_bpb, clocktrain or the PyTorch 2 reference compiled? Both train the same recipe (default
# cpu-small) on the same prepared shards and tokenizer, one after the other with the same thread
# count, for the same training clock (startup, torch.compile's compilation included, excluded in both:
# docs/train.md "The training clock", bench/torch2_train.py); then clocktrain's trusted evaluator
# (`clocktrain eval bpb`, f32) scores both checkpoints on the pinned val set. Prints steps, tokens,
# clock and val_bpb for each.
#
# usage: bench/quality_per_clock.sh BUDGET [DATA]
#   DATA: a prepared data folder (manifest.json, train_*.bin, tokenizer/; docs/data.md) made with the
#   recipe's vocabulary, e.g. the runs/cache/<key> folder `clocktrain run recipes/cpu-small.toml`
#   prepares; default runs/data, prepared with `clocktrain data prepare --out runs/data` if missing.
# env: BUILD=build/release  RECIPE=recipes/cpu-small.toml  THREADS=0 (every core)  OUT=runs/quality-<UTC time>
#      EVAL_TOKENS=0 (the whole val set; N: its first N targets)  MODE=compile (or eager)
#      CLOCKTRAIN_DATA (the raw data folder with val/, default ../shared/data)  TORCH2_VENV
#
# Before training it checks that the Python port of the loader reads clocktrain's rows (3 batches); after,
# that clocktrain loads the torch checkpoint and gives the loss torch computes (bench/torch2_parity_check.py).
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:?usage: bench/quality_per_clock.sh BUDGET [DATA]}
data=${2:-runs/data}
build=${BUILD:-build/release}
recipe=${RECIPE:-recipes/cpu-small.toml}
threads=${THREADS:-0}
out=${OUT:-runs/quality-$(date -u +%Y%m%dT%H%M%SZ)}
eval_tokens=${EVAL_TOKENS:-0}
mode=${MODE:-compile}
raw=${CLOCKTRAIN_DATA:-../shared/data}
clocktrain="$build/clocktrain"
[ -x "$clocktrain" ] && [ -x "$build/bench/loader_rows_bench" ] ||
  { echo "missing $clocktrain or $build/bench/loader_rows_bench: build first" >&2; exit 1; }
python=$(bench/torch2_venv.sh)
[ -f "$data/manifest.json" ] || "$clocktrain" data prepare --out "$data"
mkdir -p "$out"
# The recipe's row length, micro-batch and seed, as the trainer resolves them (baseline.toml's defaults).
read -r seq_len rows seed < <(cd bench && "$python" -c "import sys; from torch_recipe import load_recipe
r = load_recipe(sys.argv[1]); print(r['model']['sequence_len'], r['batch']['micro_batch_rows'], r['run']['seed'])" "../$recipe")

echo "== rows: the torch side reads clocktrain's"
"$python" bench/torch2_parity_check.py rows "$data" "$seq_len" "$rows" "$seed" 3 --bench "$build/bench/loader_rows_bench"
echo "== clocktrain train $recipe --budget $budget"
"$clocktrain" train "$recipe" --budget "$budget" --data "$data" --out "$out/clocktrain" --threads "$threads" --no-progress
echo "== torch ($mode) $recipe --budget $budget"
"$python" bench/torch2_train.py "$recipe" --budget "$budget" --data "$data" --out "$out/torch2" --threads "$threads" \
  --mode "$mode" | tail -1
echo "== the torch checkpoint in clocktrain's evaluator"
"$python" bench/torch2_parity_check.py checkpoint "$out/torch2/checkpoint" --clocktrain "$clocktrain" --data "$raw"
for side in clocktrain torch2; do
  echo "== clocktrain eval bpb $out/$side/checkpoint"
  "$clocktrain" eval bpb "$out/$side/checkpoint" --data "$raw" --tokens "$eval_tokens" --threads "$threads" \
    --json --out "$out/$side/bpb.json" > /dev/null
done

/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print(f"\n{'':<34} {'steps':>6} {'tokens':>10} {'clock s':>8} {'startup s':>9} {'final loss':>10} {'val_bpb':>9} {'targets':>9}")
for side in ("clocktrain", "torch2"):
    s = json.load(open(f"{out}/{side}/train_summary.json"))
    b = json.load(open(f"{out}/{side}/bpb.json"))
    name = s.get("tool") or f"clocktrain ({s['recipe']['name']})"
    print(f"{name:<34} {s['steps']:>6} {s['tokens']:>10} {s['train_clock_seconds']:>8.1f} {s['startup_seconds']:>9.1f} "
          f"{s['final_loss']:>10.4f} {b['val_bpb']:>9.5f} {b['targets']:>9}")
PY
echo "run folders: $out/clocktrain, $out/torch2"
