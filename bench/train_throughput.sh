#!/usr/bin/env bash
# Training throughput of cpu-small and baseline on this machine: clocktrain (bench/train_throughput_bench)
# and PyTorch (bench/torch_reference.py, the same model, batch, optimizer and thread count), run
# alternately in the same invocation, ROUNDS times each, so that the ratio is measured side by side
# on a shared machine. Prints each run, then a table of medians and the ratio clocktrain / PyTorch.
#
# usage: bench/train_throughput.sh [THREADS] [ROUNDS] [CLOCK]   (defaults: every core, 2 rounds, wall)
#   CLOCK "cpu" times both sides with their process's CPU clock: on a shared machine, with THREADS 1,
#   that approximates an idle core (see docs/performance.md, "Training throughput").
# env:   BUILD=build/release   RECIPES="cpu-small baseline"   PRECISIONS="f32 bf16"
#   clocktrain runs once per matmul precision in PRECISIONS (backend.matmul_precision: f32, the
#   reference path, and bf16, bf16 operands with f32 accumulation on AMX), whatever the recipe says;
#   PyTorch runs in float32 (bench/torch_reference.py), the same for both.
#
# The baseline is measured at 2 rows of 1024 tokens per step (one micro-batch) to keep a step under
# a minute on 2 cores; its optimizer step then weighs 32x more than in the recipe's 65,536-token
# step, so the table adds the throughput projected at the recipe's batch: 32 x (forward + backward)
# + one optimizer step, from the same measured phases.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
rounds=${2:-2}
clock=${3:-wall}
build=${BUILD:-build/release}
recipes=${RECIPES:-"cpu-small baseline"}
precisions=${PRECISIONS:-"f32 bf16"}
bench="$build/bench/train_throughput_bench"
[ -x "$bench" ] || { echo "missing $bench: build first (cmake --build --preset release)" >&2; exit 1; }
# The same OpenBLAS kernels for PyTorch as the CPU backend selects for itself (gemm_library.h): on a
# CPU that OpenBLAS 0.3.21 does not know it would otherwise fall back to slow generic kernels.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -q avx512_bf16 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Cooperlake;
elif [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
export OMP_NUM_THREADS=$threads

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for recipe in $recipes; do
  args=(--threads "$threads" --clock "$clock" --steps 3 --warmup 1)
  if [ "$recipe" = baseline ]; then
    args=(--threads "$threads" --clock "$clock" --tokens-per-step 2048 --micro-batch-rows 2 --steps 2 --warmup 1)
  fi
  for round in $(seq "$rounds"); do
    for precision in $precisions; do
      echo "== $recipe, round $round: clocktrain, matmul_precision $precision" >&2
      "$bench" "recipes/$recipe.toml" "${args[@]}" --matmul-precision "$precision" | tee >(cat >&2) |
        sed -n 's/^json: //p' >> "$results"
    done
    echo "== $recipe, round $round: torch" >&2
    /usr/bin/python3 bench/torch_reference.py "recipes/$recipe.toml" "${args[@]}" | tee >(cat >&2) |
      sed -n 's/^json: //p' >> "$results"
  done
done

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
