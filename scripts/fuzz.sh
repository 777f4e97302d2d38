#!/usr/bin/env bash
# Runs clocktrain's libFuzzer targets (fuzz/*_fuzz.cpp; docs/reliability.md).
#
#   scripts/fuzz.sh ci                      every target for FUZZ_CI_SECONDS (default 10) seconds
#   scripts/fuzz.sh local [SECONDS]         every target for SECONDS (default 600) seconds
#   scripts/fuzz.sh one TARGET [SECONDS]    one target (default 600 seconds)
#
# Environment: FUZZ_PARALLEL (targets run at once, default: the number of cores), FUZZ_TARGETS
# (a space-separated subset), FUZZ_RUNS (stop each target after this many executions, or at SECONDS,
# whichever comes first: the deep runs of docs/reliability.md use 10000000 and 14400), JOBS (build
# jobs, default 2).
# Each target starts from its seeds (fuzz/corpus/<target>/) plus, in local mode, the inputs it found
# in earlier local runs (build/fuzz/corpus/<target>/). A finding -- a crash, a sanitizer report, an
# exception other than ct::Error, a broken invariant, an input slower than 10 s, more than 2 GiB of
# memory or one allocation over 512 MiB -- stops that target and leaves the input in
# build/fuzz/findings/<target>/. Prints executions per target; exits 1 if anything was found.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
  ci) seconds=${FUZZ_CI_SECONDS:-10} ;;
  local) seconds=${2:-600} ;;
  one)
    [ -n "${2:-}" ] || { echo "usage: $0 one TARGET [SECONDS]" >&2; exit 2; }
    FUZZ_TARGETS=$2
    seconds=${3:-600}
    ;;
  *)
    echo "usage: $0 ci | local [SECONDS] | one TARGET [SECONDS]" >&2
    exit 2
    ;;
esac

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target fuzzers -j"${JOBS:-2}" >/dev/null

bin_dir=build/fuzz/fuzz
targets=()
if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  for exe in "$bin_dir"/fuzz_*; do targets+=("$(basename "$exe" | sed 's/^fuzz_//')"); done
fi
for t in "${targets[@]}"; do
  [ -x "$bin_dir/fuzz_$t" ] || { echo "fuzz.sh: no target '$t' (fuzz/${t}_fuzz.cpp)" >&2; exit 2; }
done

parallel=${FUZZ_PARALLEL:-$(nproc)}
logs=build/fuzz/logs
rm -rf "$logs"
mkdir -p "$logs"

run_target() {
  local t=$1 work seeds=fuzz/corpus/$1 findings=build/fuzz/findings/$1
  if [ "$mode" = ci ]; then
    work=build/fuzz/ci-corpus/$t
    rm -rf "$work"
  else
    work=build/fuzz/corpus/$t
  fi
  mkdir -p "$work" "$findings" "$seeds"
  # Inputs up to twice the largest seed (at least 8 KiB): room to grow, yet fast to run.
  local largest max_len
  largest=$( (find "$seeds" -type f -printf '%s\n'; echo 0) | sort -n | tail -1)
  max_len=$((2 * largest > 8192 ? 2 * largest : 8192))
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512
              -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$findings/")
  [ -z "${FUZZ_RUNS:-}" ] || args+=(-runs="$FUZZ_RUNS")
  if [ -f "fuzz/dict/$t.dict" ]; then
    # A line '#include NAME' in a dictionary stands for fuzz/dict/NAME.dict (e.g. the JSON tokens).
    awk '/^#include /{while ((getline line < ("fuzz/dict/" $2 ".dict")) > 0) print line; next} {print}' \
      "fuzz/dict/$t.dict" >"build/fuzz/dict-$t.dict"
    args+=(-dict="build/fuzz/dict-$t.dict")
  fi
  local rc=0
  "$bin_dir/fuzz_$t" "${args[@]}" "$work" "$seeds" >"$logs/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$logs/$t.rc"
}

echo "fuzzing ${#targets[@]} targets for ${seconds} s each, ${parallel} at a time (logs in $logs)"
start=$SECONDS
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  run_target "$t" &
done
wait

findings=0
total_execs=0
printf '%-24s %12s %10s %8s %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  log=$logs/$t.log
  rc=$(cat "$logs/$t.rc" 2>/dev/null || echo 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | sed 's/corp: //')
  if [ "$rc" = 0 ]; then
    result="no finding"
  else
    findings=$((findings + 1))
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="FINDING (exit $rc): ${artifact:-see $log}"
  fi
  total_execs=$((total_execs + ${execs:-0}))
  printf '%-24s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${corpus:-?}" "$result"
done
echo "total: $total_execs executions in $((SECONDS - start)) s, $findings target(s) with a finding"
if [ "$findings" -gt 0 ]; then
  for t in "${targets[@]}"; do
    [ "$(cat "$logs/$t.rc")" = 0 ] && continue
    echo "---- $t ($logs/$t.log)"
    grep -m1 -A25 -E 'ERROR: |FINDING: |==[0-9]+==|runtime error|deadly signal' "$logs/$t.log" | head -40
  done
  exit 1
fi
