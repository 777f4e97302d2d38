#!/usr/bin/env bash
# Whether two clocktrain binaries train bit for bit alike on this CPU: a refactoring's check (docs/
# architecture.md). Both train recipes/tiny.toml for STEPS steps (default 20) with the same seed and
# thread count, at every CPU level this CPU has (CLOCKTRAIN_CPU_MAX_ISA) and in both matmul precisions
# (bf16 where the level has a bf16 engine); every train and held-out loss in metrics.jsonl, and the
# checkpoint's weights (SHA-256 of model.safetensors' tensors: names, dtypes, shapes and bytes; not its
# metadata, which holds the resolved recipe's hash, and that changes when a recipe field is added), must
# be equal. Prints one line per case and exits 1 at the first difference.
#
# usage: scripts/same_losses.sh BEFORE AFTER [DATA]
#   BEFORE, AFTER: clocktrain binaries (e.g. one built from the base commit in a git worktree)
#   DATA: a prepared data folder of vocabulary 8192 (default runs/data; `clocktrain data prepare`)
# env: STEPS=20  THREADS=2  OUT=a temporary folder
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: scripts/same_losses.sh BEFORE AFTER [DATA]}
after=${2:?usage: scripts/same_losses.sh BEFORE AFTER [DATA]}
data=${3:-runs/data}
steps=${STEPS:-20}
threads=${THREADS:-2}
out=${OUT:-$(mktemp -d)}
for bin in "$before" "$after"; do [ -x "$bin" ] || { echo "same_losses.sh: $bin is not an executable" >&2; exit 2; }; done
[ -f "$data/manifest.json" ] || { echo "same_losses.sh: $data holds no prepared data (manifest.json)" >&2; exit 2; }

# The levels this CPU has, from the binary's own report ("level avx512_bf16; ..."), lowest first.
native=$("$after" version | sed -n 's/.*level \([a-z0-9_]*\).*/\1/p' | head -1)
levels=()
for level in avx2 avx512 avx512_bf16 amx; do
  levels+=("$level")
  [ "$level" = "$native" ] && break
done

losses() {  # the losses of a metrics.jsonl, one per line: kind, step, split, loss
  /usr/bin/python3 -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") in ("train", "eval"):
        print(r["kind"], r["step"], r.get("split", ""), repr(r["loss"]))' "$1"
}

weights() {  # SHA-256 of a safetensors file's tensors, its __metadata__ left out
  /usr/bin/python3 -c 'import hashlib, json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header.pop("__metadata__", None)
print(hashlib.sha256(json.dumps(header, sort_keys=True).encode() + data[8 + n:]).hexdigest())' "$1"
}

mkdir -p "$out"
cases=0
for level in "${levels[@]}"; do
  for precision in f32 bf16; do
    if [ "$precision" = bf16 ] && [ "$level" != avx512_bf16 ] && [ "$level" != amx ]; then continue; fi
    recipe="$out/tiny-$precision.toml"
    sed "s/^matmul_precision = .*/matmul_precision = \"$precision\"/" recipes/tiny.toml > "$recipe"
    grep -q "^matmul_precision = \"$precision\"" "$recipe" || { echo "same_losses.sh: recipes/tiny.toml sets no backend.matmul_precision" >&2; exit 2; }
    for side in before after; do
      bin=$before; [ $side = after ] && bin=$after
      rm -rf "$out/$level-$precision-$side"
      CLOCKTRAIN_CPU_MAX_ISA=$level "$bin" train "$recipe" --steps "$steps" --threads "$threads" --data "$data" \
        --out "$out/$level-$precision-$side" --no-progress > "$out/$level-$precision-$side.log" 2>&1 ||
        { echo "$level $precision: the $side binary failed (log: $out/$level-$precision-$side.log)"; exit 1; }
    done
    a=$(losses "$out/$level-$precision-before/metrics.jsonl")
    b=$(losses "$out/$level-$precision-after/metrics.jsonl")
    wa=$(weights "$out/$level-$precision-before/checkpoint/model.safetensors")
    wb=$(weights "$out/$level-$precision-after/checkpoint/model.safetensors")
    if [ "$a" != "$b" ] || [ "$wa" != "$wb" ]; then
      echo "$level $precision: DIFFERENT"
      diff <(echo "$a") <(echo "$b") | head -5
      [ "$wa" = "$wb" ] || echo "the weights differ"
      exit 1
    fi
    echo "$level $precision: the same $(echo "$a" | wc -l) losses (last: $(echo "$a" | tail -1)), the same weights"
    cases=$((cases + 1))
  done
done
echo "same_losses.sh: $cases cases alike"
