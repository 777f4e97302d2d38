#!/usr/bin/env bash
# Data-parallel scaling on this machine (docs/parallel.md): cpu-small trained by
#   2 processes x 1 thread under mpirun (Open MPI) and under torchrun (Gloo),
#   1 process x 2 threads, 1 process x 1 thread,
# alternated ROUNDS times in one invocation (side by side on a shared machine), STEPS steps each.
# Prints, per layout, the median tokens/s over the runs' timed steps (the training clock's, startup
# excluded), the ratio to 1 x 2, and for 2 x 1 the median time rank 0 waited for the reductions
# after its backward pass (metrics.jsonl's reduction_wait_seconds). Target: 2 x 1 >= 0.9x
# the throughput of 1 x 2.
# torchrun: TORCHRUN names one; by default PyTorch 2's from build/torch2-venv (bench/torch2_venv.sh)
# when there, else tests/parallel/torchrun_standin.py (the same variables and store; the launcher
# does not take part in the steps).
#
# usage: bench/parallel_scaling.sh [STEPS] [ROUNDS]        (defaults: 8 steps, 2 rounds)
# env:   BUILD=build/release  RECIPE=recipes/cpu-small.toml  PRECISION=f32|bf16|auto (default auto)
#        DATA=a prepared data folder (default: runs/bench-data, made by `clocktrain data prepare`
#        from ../shared/data when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-8}
rounds=${2:-2}
build=${BUILD:-build/release}
recipe=${RECIPE:-recipes/cpu-small.toml}
precision=${PRECISION:-auto}
data=${DATA:-runs/bench-data}
bin="$build/clocktrain"
[ -x "$bin" ] || { echo "missing $bin: build first (cmake --build --preset release)" >&2; exit 1; }
command -v mpirun > /dev/null || { echo "mpirun is missing: scripts/install-deps.sh installs Open MPI" >&2; exit 1; }
if [ ! -f "$data/manifest.json" ]; then
  echo "== preparing $data (clocktrain data prepare)" >&2
  "$bin" data prepare --out "$data" >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the recipe at the asked precision, by steps (every run the same length)
sed "s/^matmul_precision = .*/matmul_precision = \"$precision\"/" "$recipe" > "$work/recipe.toml"
# mpirun refuses root unless told; ranks unbound so the OS spreads them over the cores
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -n "${TORCHRUN:-}" ]; then torchrun=($TORCHRUN)
elif [ -x build/torch2-venv/bin/torchrun ]; then torchrun=(build/torch2-venv/bin/torchrun)
else torchrun=(python3 tests/parallel/torchrun_standin.py)
fi
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(mpirun --version | head -1)" >&2

run() {  # run LAYOUT PROCESSES THREADS ROUND
  local out="$work/$1-$4" launcher=()
  case "$1" in
    *gloo) launcher=("${torchrun[@]}" --nproc_per_node "$2" --no-python) ;;
    *) [ "$2" -gt 1 ] && launcher=(mpirun -np "$2" --bind-to none) ;;
  esac
  echo "== round $4: $1" >&2
  "${launcher[@]}" "$bin" train "$work/recipe.toml" --data "$data" --threads "$3" --steps "$steps" \
    --no-progress --out "$out" >&2
  python3 - "$out/metrics.jsonl" "$1" >> "$work/results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
timed = [r for r in rows if r["kind"] == "train" and r["in_clock"]]
waits = [r["reduction_wait_seconds"] for r in timed if "reduction_wait_seconds" in r]
print(json.dumps({"layout": sys.argv[2], "tokens_per_second": statistics.median(r["tokens_per_second"] for r in timed),
                  "step_seconds": statistics.median(r["step_seconds"] for r in timed),
                  "reduction_wait_seconds": statistics.median(waits) if waits else None, "timed_steps": len(timed)}))
EOF
}

for round in $(seq "$rounds"); do
  run "2x1" 2 1 "$round"
  run "2x1gloo" 2 1 "$round"
  run "1x2" 1 2 "$round"
  run "1x1" 1 1 "$round"
done

python3 - "$work/results" "$recipe" "$precision" "$steps" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows: by.setdefault(r["layout"], []).append(r)
med = lambda layout, key: statistics.median(r[key] for r in by[layout])
ref = med("1x2", "tokens_per_second")
print(f"{sys.argv[2]}, matmul_precision {sys.argv[3]}, {sys.argv[4]} steps per run, medians over {len(by['1x2'])} runs each")
print(f"{'layout':<34}{'tokens/s':>10}{'step s':>9}{'vs 1x2':>8}{'reduction wait s':>18}")
names = {"2x1": "2 processes x 1 thread, MPI", "2x1gloo": "2 processes x 1 thread, Gloo",
         "1x2": "1 process x 2 threads", "1x1": "1 process x 1 thread"}
for layout in ("2x1", "2x1gloo", "1x2", "1x1"):
    tps = med(layout, "tokens_per_second")
    wait = [r["reduction_wait_seconds"] for r in by[layout] if r["reduction_wait_seconds"] is not None]
    print(f"{names[layout]:<34}{tps:>10.0f}{med(layout, 'step_seconds'):>9.3f}{tps / ref:>8.3f}"
          f"{(f'{statistics.median(wait):.3f}' if wait else '-'):>18}")
print("runs: " + " ".join(f"{r['layout']}={r['tokens_per_second']:.0f}" for r in rows))
EOF
