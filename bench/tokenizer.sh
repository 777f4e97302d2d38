#!/usr/bin/env bash
# Tokenizer benchmark: trains clocktrain's BPE tokenizer and sentencepiece's BPE trainer (spm_train)
# side by side on the same text, the first MAX_CHARS characters of the training corpus, and prints
# both times and their ratio; then measures encoding throughput on that text with 1 thread and with
# all threads.
#
#   bench/tokenizer.sh [MAX_CHARS]        (default 100000000; run from the repository root after
#                                          cmake --build --preset release)
#
# Environment: CLOCKTRAIN_DATA (the data folder; default ../shared/data), THREADS (default: all
# cores), VOCAB (default 8192), WORK (scratch folder; default a new temporary folder).
# Times are wall-clock seconds plus CPU seconds (user + system): on a shared machine the wall time
# also counts the time other programs held the cores, so compare the ratios of one run.
set -euo pipefail
cd "$(dirname "$0")/.."

max_chars=${1:-100000000}
data=${CLOCKTRAIN_DATA:-../shared/data}
threads=${THREADS:-$(nproc)}
vocab=${VOCAB:-8192}
work=${WORK:-$(mktemp -d /tmp/clocktrain-tokenizer-bench.XXXXXX)}
mkdir -p "$work"

bin=""
for candidate in build/release/clocktrain build/release/src/cli/clocktrain; do
  [[ -x $candidate ]] && bin=$candidate && break
done
bench_bin=build/release/bench/tokenizer_bench
[[ -n $bin && -x $bench_bin ]] || { echo "bench/tokenizer.sh: build first: cmake --preset release && cmake --build --preset release -j2" >&2; exit 1; }
command -v spm_train >/dev/null || { echo "bench/tokenizer.sh: spm_train not found (Debian package sentencepiece)" >&2; exit 1; }

echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "text: the first $max_chars characters of $data/corpus; vocab $vocab; $threads threads"

text=$work/corpus_text.txt
/usr/bin/python3 bench/extract_corpus_text.py "$data" "$max_chars" "$text"

# Runs a command, printing its output to a log; sets wall/cpu (seconds) from bash's time.
timed() {
  local log=$1; shift
  local t
  t=$( { TIMEFORMAT='%R %U %S'; time "$@" >"$log" 2>&1; } 2>&1 ) || { cat "$log" >&2; exit 1; }
  wall=$(echo "$t" | awk '{print $1}')
  cpu=$(echo "$t" | awk '{printf "%.2f", $2 + $3}')
}

timed "$work/clocktrain.log" "$bin" tokenizer train --data "$data" --out "$work/clocktrain_tok" \
  --vocab-size "$vocab" --max-chars "$max_chars" --threads "$threads"
ct_wall=$wall ct_cpu=$cpu
echo "clocktrain tokenizer train: ${ct_wall} s wall, ${ct_cpu} s CPU  ($(grep '^time' "$work/clocktrain.log" | sed 's/^time *//'))"

timed "$work/spm.log" spm_train --input="$text" --model_prefix="$work/spm" --model_type=bpe \
  --vocab_size="$vocab" --num_threads="$threads" --input_sentence_size=0 --minloglevel=1
spm_wall=$wall spm_cpu=$cpu
echo "spm_train --model_type=bpe:  ${spm_wall} s wall, ${spm_cpu} s CPU"

awk -v a="$spm_wall" -v b="$ct_wall" -v c="$spm_cpu" -v d="$ct_cpu" \
  'BEGIN { printf "ratio spm_train / clocktrain: %.1fx wall, %.1fx CPU\n", a / b, c / d }'

echo "encoding throughput (tokenizer_bench):"
"$bench_bin" --tokenizer "$work/clocktrain_tok" --text "$text" --threads "$threads" --repeats 3
echo "scratch folder: $work"
