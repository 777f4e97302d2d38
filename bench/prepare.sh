#!/usr/bin/env bash
# Times `clocktrain data prepare` on the whole shipped corpus (docs/performance.md, "Data preparation").
#
#   bench/prepare.sh [WORK_DIR]        (default runs/bench-prepare)
#
# Trains the tokenizer once (vocab 8192, the whole corpus; reused from WORK_DIR/tokenizer on later
# runs), then prepares the data with every core and again with one thread, side by side, and prints
# seconds, MB/s of text and tokens for each, the speed-up, the machine and its load. The two runs
# must give the same manifest hash (the output does not depend on the thread count): checked here.
# Environment: CLOCKTRAIN_BIN (default build/release/clocktrain), CLOCKTRAIN_DATA (default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${CLOCKTRAIN_BIN:-build/release/clocktrain}
data=${CLOCKTRAIN_DATA:-../shared/data}
work=${1:-runs/bench-prepare}
[ -x "$bin" ] || { echo "bench/prepare.sh: no binary at $bin (build first)" >&2; exit 1; }
mkdir -p "$work"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores available, $(free -g | awk '/Mem:/{print $2}') GiB"
echo "binary:  $("$bin" version | head -1)"
if [ ! -f "$work/tokenizer/tokenizer_clocktrain.json" ] && [ ! -f "$work/tokenizer/tokenizer.json" ]; then
  echo "training the tokenizer (vocab 8192, whole corpus) into $work/tokenizer ..."
  start=$(date +%s.%N)
  "$bin" tokenizer train --data "$data" --out "$work/tokenizer" --vocab-size 8192 > "$work/tokenizer-train.log"
  echo "tokenizer trained in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s"
fi

run() {  # run THREADS: prepare into $work/out-THREADS; prints one result line
  local threads=$1
  rm -rf "$work/out-$threads"
  /usr/bin/python3 - "$bin" "$data" "$work" "$threads" <<'PY'
import json, resource, subprocess, sys, time
bin, data, work, threads = sys.argv[1:5]
out = f"{work}/out-{threads}"
load = open("/proc/loadavg").read().split()[:3]
start = time.monotonic()
with open(f"{work}/prepare-{threads}.log", "w") as log:
    subprocess.run([bin, "data", "prepare", "--data", data, "--tokenizer", f"{work}/tokenizer", "--out", out,
                    "--threads", threads], stdout=log, check=True)
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
open(f"{work}/wall-{threads}", "w").write(f"{wall}\n")
m = json.load(open(f"{out}/manifest.json"))
text = sum(m["summary"]["text_bytes"].values())
tokens = m["summary"]["tokens"]
print(f"threads={threads:>2}  wall {wall:6.1f} s  cpu {usage.ru_utime + usage.ru_stime:6.1f} s  "
      f"text {text / 1e6:6.1f} MB  {text / 1e6 / wall:6.2f} MB/s  tokens {sum(tokens.values()):,} "
      f"(train {tokens['train']:,}, heldout {tokens['heldout']:,}, val {tokens['val']:,})  "
      f"peak RSS {usage.ru_maxrss / 1024:.0f} MiB  load before {' '.join(load)}")
PY
}

cores=$(nproc)
run "$cores"
run 1
a=$(sha256sum < "$work/out-$cores/manifest.json" | cut -c1-64)
b=$(sha256sum < "$work/out-1/manifest.json" | cut -c1-64)
if [ "$a" = "$b" ] && cmp -s <(cd "$work/out-$cores" && cat ./*.bin | sha256sum) <(cd "$work/out-1" && cat ./*.bin | sha256sum); then
  echo "same bytes with $cores threads and 1 thread: yes (manifest file sha256 $a)"
else
  echo "same bytes with $cores threads and 1 thread: NO" >&2
  exit 1
fi
w1=$(cat "$work/wall-1"); wn=$(cat "$work/wall-$cores")
echo "speed-up $cores threads over 1: $(awk -v a="$w1" -v b="$wn" 'BEGIN{printf "%.2f", a / b}')x   load after $(cut -d' ' -f1-3 /proc/loadavg)"
