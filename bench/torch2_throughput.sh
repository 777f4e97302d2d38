#!/usr/bin/env bash
# Training throughput of clocktrain against the PyTorch 2 a user installs from PyPI, eager and
# torch.compile (bench/torch2_venv.sh: pinned, in a venv of the benches' own), on the same machine,
# thread count, model (bench/torch_reference.py, docs/model.md's twin), batch and optimizer, run
# alternately in one invocation, ROUNDS times each, for cpu-small and the baseline shape, in f32 and,
# where the CPU has a bf16 engine (AVX512-BF16 or AMX), bf16 (clocktrain's backend.matmul_precision
# bf16; torch.autocast(bfloat16) on the torch side). Prints the machine (CPU model, ISA flags, versions),
# each run, then a table of medians, the ratios and issue 23's targets (>= 1.5x eager, >= 1.2x compiled).
#
# usage: bench/torch2_throughput.sh [THREADS] [ROUNDS] [CLOCK]   (defaults: every core, 2 rounds, wall)
#   CLOCK "cpu" times both sides with their process's CPU clock: on a shared machine, with THREADS 1,
#   that approximates an idle core (docs/performance.md, "Training throughput"); on a quiet machine
#   use the wall clock with every core, what a training run gets.
# env:   BUILD=build/release   RECIPES="cpu-small baseline"   PRECISIONS="f32 bf16" (bf16 only with an
#        engine)   MODES="eager compile"   TORCH2_VENV=build/torch2-venv
#
# Shapes as bench/train_throughput.sh: cpu-small at its recipe's 16,384-token step; the baseline at 2
# rows of 1024 tokens per step (one micro-batch, to keep a step near a minute on 2 cores), with the
# throughput projected at the recipe's 65,536-token step from the measured phases (the table says so).
# torch.compile's compilation happens in the warm-up step, outside the measured ones (startup, as in
# clocktrain's training clock); its time is printed with each run.
set -euo pipefail
cd "$(dirname "$0")/.."
cores=$(nproc)  # before OMP_NUM_THREADS is exported below: nproc honours it
threads=${1:-$cores}
rounds=${2:-2}
clock=${3:-wall}
build=${BUILD:-build/release}
recipes=${RECIPES:-"cpu-small baseline"}
modes=${MODES:-"eager compile"}
bench="$build/bench/train_throughput_bench"
[ -x "$bench" ] || { echo "missing $bench: build first (cmake --build --preset release)" >&2; exit 1; }
if grep -q -E 'avx512_bf16|amx_bf16' /proc/cpuinfo; then precisions=${PRECISIONS:-"f32 bf16"};
else precisions=${PRECISIONS:-f32}; fi
python=$(bench/torch2_venv.sh)
export OMP_NUM_THREADS=$threads

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
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for recipe in $recipes; do
  args=(--threads "$threads" --clock "$clock" --steps 3 --warmup 1)
  if [ "$recipe" = baseline ]; then
    args=(--threads "$threads" --clock "$clock" --tokens-per-step 2048 --micro-batch-rows 2 --steps 2 --warmup 1)
  fi
  for round in $(seq "$rounds"); do
    for precision in $precisions; do
      echo "== $recipe, round $round, $precision: clocktrain" >&2
      "$bench" "recipes/$recipe.toml" "${args[@]}" --matmul-precision "$precision" | tee >(cat >&2) |
        sed -n 's/^json: //p' >> "$results"
      for mode in $modes; do
        echo "== $recipe, round $round, $precision: torch $mode" >&2
        "$python" bench/torch_reference.py "recipes/$recipe.toml" "${args[@]}" --mode "$mode" \
          --precision "$precision" | tee >(cat >&2) | sed -n 's/^json: //p' >> "$results"
      done
    done
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 bench/torch2_throughput_table.py "$results"
