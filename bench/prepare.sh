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
if [ ! -f "$work/tokenizer/tokenizer.json" ]; then
  echo "training the tokenizer (vocab 8192, whole corpus) into $work/tokenizer ..."
  start=$(date +%s.%N)
  "$bin" tokenizer train --data "$data" --out "$work/tokenizer" --vocab-size 8192 > "$work/tokenizer-train.log"
  echo "tokenizer trained in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s"
fi

run() {  # run THREADS: prepare into $work/out-THREADS; prints one result line
  local threads=$1 out="$work/out-$1" log="$work/prepare-$1.log"
  rm -rf "$out"
  local load_before
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  /usr/bin/time -f "%e %U %S %M" -o "$work/time-$threads" \
    "$bin" data prepare --data "$data" --tokenizer "$work/tokenizer" --out "$out" --threads "$threads" > "$log"
  read -r wall user sys rss_kb < "$work/time-$threads"
  /usr/bin/python3 - "$out/manifest.json" "$wall" "$user" "$sys" "$rss_kb" "$threads" "$load_before" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
wall, user, sys_s, rss_kb, threads, load = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
text = sum(m["summary"]["text_bytes"].values())
tokens = sum(m["summary"]["tokens"].values())
print(f"threads={threads:>2}  wall {wall:7.1f} s  cpu {user + sys_s:7.1f} s  text {text / 1e6:7.1f} MB  "
      f"{text / 1e6 / wall:6.2f} MB/s  tokens {tokens:,} (train {m['summary']['tokens']['train']:,}, "
      f"heldout {m['summary']['tokens']['heldout']:,}, val {m['summary']['tokens']['val']:,})  "
      f"peak RSS {rss_kb / 1024:.0f} MiB  load before {load}")
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
w1=$(cut -d' ' -f1 "$work/time-1"); wn=$(cut -d' ' -f1 "$work/time-$cores")
echo "speed-up $cores threads over 1: $(awk -v a="$w1" -v b="$wn" 'BEGIN{printf "%.2f", a / b}')x   load after $(cut -d' ' -f1-3 /proc/loadavg)"
