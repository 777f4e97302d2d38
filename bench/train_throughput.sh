#!/usr/bin/env bash
# Training throughput of cpu-small and baseline on this machine: clocktrain (bench/train_throughput_bench)
# and PyTorch (bench/torch_reference.py, model.md's twin: the same model, batch, optimizer and thread
# count), run alternately in the same invocation, ROUNDS times each, so that the ratio is measured
# side by side on a shared machine. Prints each run, then a table of medians and the ratios.
#
# usage: bench/train_throughput.sh [THREADS] [ROUNDS] [CLOCK]   (defaults: every core, 2 rounds, wall)
#   CLOCK "cpu" times both sides with their process's CPU clock: on a shared machine, with THREADS 1,
#   that approximates an idle core (see docs/performance.md, "Training throughput"); on a quiet
#   machine use the wall clock with every core, what a training run gets.
# env:   BUILD=build/release   RECIPES="cpu-small baseline"   PRECISIONS="f32 bf16"
#        TORCH=debian|venv (which PyTorch; default debian)
#   clocktrain runs once per matmul precision in PRECISIONS (backend.matmul_precision: f32, the
#   reference path, and bf16, bf16 operands with f32 accumulation on AMX), whatever the recipe says.
#   TORCH=debian: Debian's torch (/usr/bin/python3), once per round in float32, the same for every
#     precision; the table gives the ratio clocktrain / PyTorch.
#   TORCH=venv: the PyTorch 2 a user installs from PyPI (bench/torch2_venv.sh: pinned, in a venv of
#     the benches' own; TORCH2_VENV=build/torch2-venv), eager and torch.compile (MODES="eager
#     compile"), in each precision (bf16: torch.autocast(bfloat16); PRECISIONS defaults to f32 alone
#     where the CPU has no bf16 engine, AVX512-BF16 or AMX). Prints the machine (CPU model, ISA flags,
#     versions) first and the table of bench/torch2_throughput_table.py (the targets: >= 1.5x
#     eager, >= 1.2x compiled). torch.compile's compilation happens in the warm-up step, outside the
#     measured ones (startup, as in clocktrain's training clock); its time is printed with each run.
#     bench/torch2_throughput.sh is this script with TORCH=venv.
#
# The baseline is measured at 2 rows of 1024 tokens per step (one micro-batch) to keep a step under
# a minute on 2 cores; its optimizer step then weighs 32x more than in the recipe's 65,536-token
# step, so the table adds the throughput projected at the recipe's batch: 32 x (forward + backward)
# + one optimizer step, from the same measured phases.
set -euo pipefail
cd "$(dirname "$0")/.."
cores=$(nproc)  # before OMP_NUM_THREADS is exported below: nproc honours it
threads=${1:-$cores}
rounds=${2:-2}
clock=${3:-wall}
build=${BUILD:-build/release}
recipes=${RECIPES:-"cpu-small baseline"}
torch=${TORCH:-debian}
bench="$build/bench/train_throughput_bench"
[ -x "$bench" ] || { echo "missing $bench: build first (cmake --build --preset release)" >&2; exit 1; }
case "$torch" in
  debian)
    python=/usr/bin/python3
    precisions=${PRECISIONS:-"f32 bf16"}
    # The same OpenBLAS kernels for PyTorch as the CPU backend selects for itself (gemm_library.h): on
    # a CPU that OpenBLAS 0.3.21 does not know it would otherwise fall back to slow generic kernels.
    if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -q avx512_bf16 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Cooperlake;
    elif [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
    ;;
  venv)
    python=$(bench/torch2_venv.sh)
    modes=${MODES:-"eager compile"}
    if grep -q -E 'avx512_bf16|amx_bf16' /proc/cpuinfo; then precisions=${PRECISIONS:-"f32 bf16"};
    else precisions=${PRECISIONS:-f32}; fi
    ;;
  *) echo "TORCH=$torch: expected debian or venv" >&2; exit 2 ;;
esac
export OMP_NUM_THREADS=$threads

if [ "$torch" = venv ]; then
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $cores cores available, $threads threads, $clock clock, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "ISA flags: $(grep -o -w -E 'avx2|fma|avx512f|avx512_bf16|amx_tile|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "clocktrain: $("$build/clocktrain" version 2>/dev/null | head -1)"
  "$python" - <<'PY'
import platform, re, subprocess, torch
config = torch.__config__.show()
onednn = re.search(r"MKL-DNN (v\S+)", config)
mkl = re.search(r"Math Kernel Library Version (\S+)", config)
cc = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"torch: {torch.__version__} (python {platform.python_version()}, oneDNN {onednn[1] if onednn else '?'}, "
      f"MKL {mkl[1] if mkl else '?'}, CPU capability {torch.backends.cpu.get_cpu_capability()}); "
      f"torch.compile's C++ compiler: {cc}")
PY
fi

# measure COMMAND...: one timed run (clocktrain's bench or torch_reference.py), its log to stderr, its json line kept.
results=$(mktemp)
trap 'rm -f "$results"' EXIT
measure() { "$@" | tee >(cat >&2) | sed -n 's/^json: //p' >> "$results"; }
for recipe in $recipes; do
  args=(--threads "$threads" --clock "$clock" --steps 3 --warmup 1)
  if [ "$recipe" = baseline ]; then
    args=(--threads "$threads" --clock "$clock" --tokens-per-step 2048 --micro-batch-rows 2 --steps 2 --warmup 1)
  fi
  for round in $(seq "$rounds"); do
    for precision in $precisions; do
      echo "== $recipe, round $round, $precision: clocktrain" >&2
      measure "$bench" "recipes/$recipe.toml" "${args[@]}" --matmul-precision "$precision"
      if [ "$torch" = venv ]; then
        for mode in $modes; do
          echo "== $recipe, round $round, $precision: torch $mode" >&2
          measure "$python" bench/torch_reference.py "recipes/$recipe.toml" "${args[@]}" --mode "$mode" --precision "$precision"
        done
      fi
    done
    if [ "$torch" = debian ]; then
      echo "== $recipe, round $round: torch" >&2
      measure "$python" bench/torch_reference.py "recipes/$recipe.toml" "${args[@]}"
    fi
  done
done

if [ "$torch" = venv ]; then
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/python3 bench/torch2_throughput_table.py "$results"
  exit 0
fi
/usr/bin/python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]

def fwd_bwd(r):
    """forward + backward seconds: clocktrain's step times them together (one wait per step), torch apart."""
    return r["forward_backward_seconds"] if "forward_backward_seconds" in r else r["forward_seconds"] + r["backward_seconds"]

def projected(r):
    """tokens/s at the recipe's own batch: forward+backward scale with the tokens, the optimizer step does not."""
    scale = r["recipe_tokens_per_step"] / r["tokens_per_step"]
    return r["recipe_tokens_per_step"] / (scale * fwd_bwd(r) + r["optimizer_seconds"])

print(f"\n{rows[0].get('clock', 'wall')} clock")
print(f"{'recipe':<10} {'matmuls':>7} {'tokens/step':>11} {'threads':>7} {'clocktrain tok/s':>16} {'torch tok/s':>11} "
      f"{'ratio':>6} {'model GFLOP/s':>13} {'GEMM peak':>9} {'of peak':>7}")
for recipe in dict.fromkeys(r["recipe"] for r in rows):
    th = [r for r in rows if r["recipe"] == recipe and r["impl"] == "torch"]
    th_tps = statistics.median(r["tokens_per_second"] for r in th)
    for precision in dict.fromkeys(r.get("matmul_precision", "f32") for r in rows if r["impl"] == "clocktrain"):
        ct = [r for r in rows if r["recipe"] == recipe and r["impl"] == "clocktrain"
              and r.get("matmul_precision", "f32") == precision]
        if not ct:
            continue
        ct_tps = statistics.median(r["tokens_per_second"] for r in ct)
        flops = statistics.median(r["model_flops_per_second"] for r in ct)
        peak = statistics.median(r["gemm_peak_flops"] for r in ct)
        frac = statistics.median(r["fraction_of_peak"] for r in ct)
        print(f"{recipe:<10} {precision:>7} {ct[0]['tokens_per_step']:>11} {ct[0]['threads']:>7} {ct_tps:>16.0f} "
              f"{th_tps:>11.0f} {ct_tps / th_tps:>5.2f}x {flops / 1e9:>13.1f} {peak / 1e9:>9.1f} {100 * frac:>6.1f}%")
        if ct[0]["tokens_per_step"] != ct[0]["recipe_tokens_per_step"]:
            p_ct = statistics.median(projected(r) for r in ct)
            p_th = statistics.median(projected(r) for r in th)
            f_ct = ct[0]["flops_per_token"] * p_ct
            print(f"{'':<18} projected at the recipe's {ct[0]['recipe_tokens_per_step']} tokens/step: clocktrain "
                  f"{p_ct:.0f} tok/s, torch {p_th:.0f} tok/s, ratio {p_ct / p_th:.2f}x, {100 * f_ct / peak:.1f}% of peak")
        for r_ct, r_th in zip(ct, th):
            print(f"{'':<18} round: clocktrain {r_ct['tokens_per_second']:.0f} tok/s "
                  f"(fwd+bwd {fwd_bwd(r_ct):.2f} s, "
                  f"opt {r_ct['optimizer_seconds']:.2f} s, peak {r_ct['gemm_peak_flops'] / 1e9:.0f} GFLOP/s, "
                  f"{100 * r_ct['fraction_of_window']:.0f}% of the GEMM windows' {r_ct['gemm_window_flops'] / 1e9:.0f}), "
                  f"torch {r_th['tokens_per_second']:.0f} tok/s "
                  f"(fwd {r_th['forward_seconds']:.2f} s, bwd {r_th['backward_seconds']:.2f} s, opt {r_th['optimizer_seconds']:.2f} s)")
EOF
