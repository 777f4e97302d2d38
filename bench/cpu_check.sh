#!/usr/bin/env bash
# The measurements a CPU's row in docs/performance.md needs, in one command, at the CPU's own level or
# at a lowered one (CLOCKTRAIN_CPU_MAX_ISA): what a session on a CPU not measured before (an AVX2-only
# one) runs first. Stages, each logged under OUT (default runs/cpu-check-<level>-<date>):
#   machine   lscpu's model and flags, the commit, CLOCKTRAIN_CPU_MAX_ISA and the libraries' variables
#             set (OPENBLAS_*, BLIS_*, OMP_*, ...); clocktrain's level and device description head
#             each bench's output below
#   gemm      gemm_bench on cpu-small's 15 products (4,096 tokens) and a 1536^3 square, every f32
#             library side by side (best of 7 interleaved calls)                    (~1 min)
#   ops       cpu_ops_bench: every op alone at a micro-batch's shapes                   (~1 min)
#   step      train_throughput_bench on recipes/cpu-small.toml, ROUNDS runs (default 6) of 3
#             measured steps with the op profile: tokens/s, MFU, the step's breakdown (~3 min)
#   run       the README's main command, `clocktrain run recipes/cpu-small.toml --budget 120`:
#             steps, val_bpb and the evaluator's time, the gate                          (~5 min)
# then summary.md: the figures in the forms of docs/performance.md's tables (medians and ranges).
#
# usage: bench/cpu_check.sh [OUT]      env: BUILD=build/release  ROUNDS=6  STAGES="gemm ops step run"
#   (STAGES names the stages to run; empty: the machine alone)
# Build first (cmake --build --preset release). Run it on an otherwise idle machine: every stage uses
# every core.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/release}
rounds=${ROUNDS:-6}
stages=${STAGES-"gemm ops step run"}
for binary in clocktrain bench/gemm_bench bench/cpu_ops_bench bench/train_throughput_bench; do
  [ -x "$build/$binary" ] || { echo "cpu_check: missing $build/$binary: build first (cmake --build --preset release)" >&2; exit 1; }
done
level_tag=${CLOCKTRAIN_CPU_MAX_ISA:-native}
out=${1:-runs/cpu-check-$level_tag-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
summary="$out/summary.md"
has_stage() { case " $stages " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
say() { echo "$*" | tee -a "$summary"; }

# ---- machine
{
  echo "# cpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')"
  echo "- flags: $(grep -m1 -o -w -E 'avx2|fma|avx512f|avx512dq|avx512bw|avx512vl|avx512_bf16|avx512_fp16|avx_vnni|amx_tile|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "- CLOCKTRAIN_CPU_MAX_ISA: ${CLOCKTRAIN_CPU_MAX_ISA:-not set (the level of the CPU itself)}"
  # Variables that change the libraries' kernels or threads, which some machine images set for every
  # program (one sets OPENBLAS_CORETYPE=Haswell on a Zen 5).
  echo "- libraries' variables set: $(env | grep -E '^(OPENBLAS_|BLIS_|OMP_|GOMP_|ONEDNN_|DNNL_|MKL_|CLOCKTRAIN_)' | sort | tr '\n' ' ' | sed 's/ $//' | grep . || echo none)"
} > "$summary"
cat "$summary"

# ---- gemm
if has_stage gemm; then
  "$build/bench/gemm_bench" --tokens 4096 --models cpu-small --square 1536 --repeats 7 --triad 0 > "$out/gemm.log" 2>&1
  say
  say "## GEMM libraries (gemm_bench, GFLOP/s, best of 7)"
  say
  say '```'
  tee -a "$summary" < "$out/gemm.log"
  say '```'
fi

# ---- ops
if has_stage ops; then
  "$build/bench/cpu_ops_bench" --threads "$(nproc)" > "$out/ops.log" 2>&1
  say
  say "## Ops alone (cpu_ops_bench)"
  say
  say '```'
  tee -a "$summary" < "$out/ops.log"
  say '```'
fi

# ---- step
if has_stage step; then
  : > "$out/step.log"
  for round in $(seq 1 "$rounds"); do
    echo "== round $round" >> "$out/step.log"
    "$build/bench/train_throughput_bench" recipes/cpu-small.toml --threads "$(nproc)" --clock wall --steps 3 --warmup 1 \
      --profile-ops 1 >> "$out/step.log" 2>&1
  done
  say
  say "## The training step (cpu-small, $rounds runs of 3 measured steps, train_throughput_bench)"
  say
  python3 - "$out/step.log" >> "$summary" <<'EOF'
import json, re, statistics, sys

text = open(sys.argv[1]).read()
runs = [json.loads(line[len("json: "):]) for line in text.splitlines() if line.startswith("json: ")]
if not runs:
    sys.exit("cpu_check: no json line in the step log")
def spread(values, fmt):
    return f"{fmt.format(statistics.median(values))} (median; {fmt.format(min(values))}-{fmt.format(max(values))})"
print(f"- device: {runs[0]['device']}")
print(f"- matmuls: {runs[0]['matmul_precision']} ({runs[0]['matmul_precision_reason']})")
print(f"- tokens/s: {spread([r['tokens_per_second'] for r in runs], '{:,.0f}')}")
print(f"- step: {spread([r['step_seconds'] * 1e3 for r in runs], '{:,.0f} ms')}")
print(f"- MFU against the theoretical peak at each run's clock: {spread([100 * r['mfu'] for r in runs], '{:.1f}%')}")
print(f"- theoretical peak: {spread([r['theoretical_peak_flops'] / 1e9 for r in runs], '{:.1f} GFLOP/s')}")
print(f"- measured GEMM ceiling: {spread([r['gemm_peak_flops'] / 1e9 for r in runs], '{:.1f} GFLOP/s')}")
# the op profile of each run: ms per op line "   ms   share%   calls  name"
parts = {"GEMMs": [], "attention": [], "Newton-Schulz": [], "cross-entropy": [], "the rest": [], "total": []}
for block in text.split("== round ")[1:]:
    sums = dict.fromkeys(parts, 0.0)
    for m in re.finditer(r"^\s+([0-9.]+)\s+[0-9.]+%\s+[0-9]+\s+(.+)$", block, re.M):
        ms, name = float(m.group(1)), m.group(2)
        key = ("GEMMs" if name.startswith("gemm") else "attention" if "attention" in name
               else "Newton-Schulz" if "newton_schulz" in name else "cross-entropy" if "cross_entropy" in name
               else "the rest")
        sums[key] += ms
        sums["total"] += ms
    if sums["total"] > 0:
        for key in parts:
            parts[key].append(sums[key])
if parts["total"]:
    print("- step breakdown, ms per step (median over the runs): "
          + ", ".join(f"{key} {statistics.median(values):,.0f}" for key, values in parts.items()))
EOF
  tail -n 8 "$summary"
fi

# ---- run
if has_stage run; then
  run_dir="$out/run"
  rm -rf "$run_dir"
  start=$(date +%s)
  status=0
  "$build/clocktrain" run recipes/cpu-small.toml --budget 120 --out "$run_dir" > "$out/run.log" 2>&1 || status=$?
  seconds=$(( $(date +%s) - start ))
  say
  say "## The README's main command (clocktrain run recipes/cpu-small.toml --budget 120)"
  say
  say "- exit status $status, ${seconds} s in all"
  say "- $(grep -m1 -E '^train: stopped' "$out/run.log" || echo 'train: no stop line (see run.log)')"
  say "- $(grep -m1 -E '^val_bpb [0-9]' "$out/run.log" || echo 'val_bpb: none (see run.log)')"
  say "- $(grep -m1 -E '^gate: ' "$out/run.log" || echo 'gate: no verdict (see run.log)')"
fi
echo
echo "cpu_check: $summary"
