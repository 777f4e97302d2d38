#!/usr/bin/env bash
# Packs the data that `bench/gpu_check.sh run` (the timed baseline run on the GPU machine) needs
# into .gpu_data/, which git ignores and the device call carries next to the bundle's clocktrain:
#
#   .gpu_data/prepared/   a subset of a prepared data folder (clocktrain data prepare): the
#                         tokenizer, the first SHARDS training shards and the held-out slice, with
#                         manifest.json rewritten to list exactly those shards (each keeps its
#                         SHA-256, so the trainer's checks still hold); SUBSET.txt says what was left out
#   .gpu_data/raw.tar.xz  the shipped val/ and eval_bundle/ folders, for `eval bpb` and `eval core`
#
# Why a subset: a device call carries at most 64 MiB (tree + bundle + data) and the full prepared
# data is ~220 MB, the raw corpus ~115 MB. One shard is 10M tokens: a 3-minute run on an H200
# repeats it several times, so the val_bpb of that run is a smoke figure for the GPU path (it
# trains, saves, evaluates), not comparable with a run on the full data.
#
# usage: bench/gpu_data.sh     (env: PREPARED=runs/data, SHARDS=1, CLOCKTRAIN_DATA=../shared/data)
set -euo pipefail
cd "$(dirname "$0")/.."
prepared=${PREPARED:-runs/data}
raw=${CLOCKTRAIN_DATA:-../shared/data}
shards=${SHARDS:-1}
out=.gpu_data
[ -f "$prepared/manifest.json" ] ||
  { echo "gpu_data: no $prepared/manifest.json: run 'clocktrain data prepare --out $prepared' first" >&2; exit 1; }
[ -d "$raw/val" ] && [ -d "$raw/eval_bundle" ] ||
  { echo "gpu_data: $raw has no val/ or eval_bundle/ (set CLOCKTRAIN_DATA to the shipped data folder)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/prepared"
cp -r "$prepared/tokenizer" "$out/prepared/"
/usr/bin/python3 - "$prepared" "$out/prepared" "$shards" <<'EOF'
import json, os, shutil, sys
src, dst, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
manifest = json.load(open(os.path.join(src, "manifest.json")))
train = [s for s in manifest["shards"] if s["split"] == "train"]
keep = train[:count] + [s for s in manifest["shards"] if s["split"] == "heldout"]
for s in keep:
    shutil.copyfile(os.path.join(src, s["name"]), os.path.join(dst, s["name"]))
left_out = [s["name"] for s in manifest["shards"] if s not in keep]
manifest["shards"] = keep
with open(os.path.join(dst, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
with open(os.path.join(dst, "SUBSET.txt"), "w") as f:
    tokens = sum(s["tokens"] for s in keep if s["split"] == "train")
    f.write(f"subset of {os.path.abspath(src)}: {count} training shard(s) ({tokens} tokens) and the held-out "
            f"slice; left out: {' '.join(left_out)}\n")
print(open(os.path.join(dst, "SUBSET.txt")).read(), end="")
EOF
tar -cJf "$out/raw.tar.xz" -C "$raw" val eval_bundle
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx "/$out/" "$exclude" 2>/dev/null || echo "/$out/" >>"$exclude"
data_kib=$(du -sk "$out" | cut -f1)
# the run call carries only the bundle's clocktrain, libraries and MANIFEST (docs/cuda.md)
bundle_kib=$(du -ck .gpu_bundle/bin/clocktrain.xz .gpu_bundle/lib.tar.xz .gpu_bundle/MANIFEST 2>/dev/null | tail -1 | cut -f1)
tree_kib=$(($(git ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1) / 1024))
total_kib=$((data_kib + ${bundle_kib:-0} + tree_kib))
echo "gpu_data: $out is $((data_kib / 1024)) MiB; with the bundle's clocktrain + libraries ($((${bundle_kib:-0} / 1024)) MiB) and the tree" \
  "($((tree_kib / 1024)) MiB): $((total_kib / 1024)) MiB of the 64 MiB a call carries" >&2
[ "$total_kib" -lt $((63 * 1024)) ] || { echo "gpu_data: too big to carry with the bundle (lower SHARDS)" >&2; exit 1; }
