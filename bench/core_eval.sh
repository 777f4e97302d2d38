#!/usr/bin/env bash
# Times the evaluators on one checkpoint with the real CLI: CORE (every task of the bundle, with
# --max-per-task N, N = 0 for the full run) with prefix reuse and, side by side in the same
# invocation, with --no-prefix-reuse (the plain path) and/or with bf16 matmuls (prefix reuse and
# --matmul-precision bf16); then val_bpb over the whole validation set.
# Prints the seconds of each task for each mode, and each run's wall and CPU (user + system) time,
# measured by /usr/bin/time around the whole command (loading and tokenizing included).
#
# usage: bench/core_eval.sh CHECKPOINT [MAX_PER_TASK ...]       (default MAX_PER_TASK: 500)
# env:   BUILD=build/release  THREADS=0 (all cores)  MODES="prefix plain" (any of prefix plain bf16)
#        BPB=1  OUT=<temp dir>
#        BATCH_TOKENS=16384  DATA=<data dir, else $CLOCKTRAIN_DATA or ../shared/data>
# The table: each task's wall and CPU seconds (the evaluator's own clocks), the whole commands'
# (/usr/bin/time), and for a subset the full run extrapolated task by task from its CPU seconds;
# with several modes, each task's accuracy in each mode (plain and prefix must agree exactly, bf16
# only within its rounding).
# e.g.   bench/core_eval.sh runs/ckpt 500 0        (500 per task, then the full CORE-21)
#        MODES=prefix BPB=0 bench/core_eval.sh runs/ckpt 0
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n 2,14p "$0" >&2; exit 2; }
checkpoint=$1
shift
limits=("$@")
[ ${#limits[@]} -gt 0 ] || limits=(500)
bin=${BUILD:-build/release}/clocktrain
[ -x "$bin" ] || { echo "missing $bin: build first (cmake --build --preset release)" >&2; exit 1; }
threads=${THREADS:-0}
modes=${MODES:-"prefix plain"}
batch_tokens=${BATCH_TOKENS:-16384}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
data_args=()
[ -n "${DATA:-}" ] && data_args=(--data "$DATA")

run_timed() {  # name, command...: runs it, keeps stdout in $out/name.json, wall/user/sys in $out/name.time
  local name=$1
  shift
  echo "== $name: $*" >&2
  /usr/bin/time -f '%e %U %S' -o "$out/$name.time" "$@" > "$out/$name.json"
}

for limit in "${limits[@]}"; do
  for mode in $modes; do
    case "$mode" in
      prefix) extra=() ;;
      plain) extra=(--no-prefix-reuse) ;;
      bf16) extra=(--matmul-precision bf16) ;;
      *) echo "core_eval.sh: unknown mode '$mode' (prefix, plain, bf16)" >&2; exit 2 ;;
    esac
    run_timed "core_${limit}_$mode" "$bin" eval core "$checkpoint" "${data_args[@]}" --max-per-task "$limit" \
      --threads "$threads" --batch-tokens "$batch_tokens" --json "${extra[@]}"
  done
done
if [ "${BPB:-1}" = 1 ]; then
  run_timed bpb "$bin" eval bpb "$checkpoint" "${data_args[@]}" --threads "$threads" --batch-tokens "$batch_tokens" --json
fi

data_dir=${DATA:-${CLOCKTRAIN_DATA:-../shared/data}}
/usr/bin/python3 - "$out" "$threads" "$data_dir" <<'EOF'
import glob, json, os, sys
out, threads, data_dir = sys.argv[1], sys.argv[2], sys.argv[3]

def timing(name):
    wall, user, system = (float(x) for x in open(os.path.join(out, name + ".time")).read().split()[-3:])
    return wall, user + system

# Rows of each task in the bundle (for extrapolating a --max-per-task run to the full one).
full_rows = {}
try:
    import yaml
    bundle = os.path.join(data_dir, "eval_bundle")
    for t in yaml.safe_load(open(os.path.join(bundle, "core.yaml")))["icl_tasks"]:
        path = os.path.join(bundle, "eval_data", t["dataset_uri"])
        if os.path.exists(path):
            full_rows[t["label"]] = sum(1 for line in open(path) if line.strip())
except (OSError, ImportError):
    pass

runs = {}
for path in sorted(glob.glob(os.path.join(out, "core_*.json"))):
    name = os.path.basename(path)[:-5]
    _, limit, mode = name.split("_")
    runs.setdefault(int(limit), {})[mode] = (json.load(open(path)), timing(name))
for limit, modes in sorted(runs.items()):
    names = list(modes)
    first = modes[names[0]][0]
    print(f"\nCORE, --max-per-task {limit or 'all'} ({first['metric']}), threads {threads}: "
          f"task seconds (the evaluator's own clock per task)")
    cols = [(m, k) for m in names for k in ("seconds", "cpu_seconds")]
    print(f"{'task':<34} {'rows':>6}" + "".join(f" {m + (' wall' if k == 'seconds' else ' CPU'):>12}" for m, k in cols) +
          (f" {names[-1]}/{names[0]} CPU" if len(names) > 1 else ""))
    def row(label, rows, values, cpu):
        ratio = f" {cpu[-1] / cpu[0]:16.2f}" if len(names) > 1 and cpu[0] > 0 else ""
        print(f"{label:<34} {rows:>6}" + "".join(f" {v:>12.1f}" for v in values) + ratio)
    for i, t in enumerate(first["tasks"]):
        row(t["label"], t["rows"], [modes[m][0]["tasks"][i][k] for m, k in cols],
            [modes[m][0]["tasks"][i]["cpu_seconds"] for m in names])
    row("all tasks", sum(t["rows"] for t in first["tasks"]),
        [sum(t[k] for t in modes[m][0]["tasks"]) for m, k in cols],
        [sum(t["cpu_seconds"] for t in modes[m][0]["tasks"]) for m in names])
    if limit > 0 and full_rows:
        # A subset's rows are the first of the shuffled task: a random sample, so each task's CPU
        # seconds per row times its full row count estimates the full run (labelled as such).
        for m in names:
            est = sum(t["cpu_seconds"] / t["rows"] * full_rows.get(t["label"], t["rows"])
                      for t in modes[m][0]["tasks"] if t["rows"] > 0)
            print(f"{m}: full CORE extrapolated from these rows: {est:.0f} CPU s "
                  f"({sum(full_rows.get(t['label'], 0) for t in first['tasks'])} rows)")
    if len(names) > 1:
        print(f"\n{'task':<34} {'rows':>6}" + "".join(f" {m + ' acc':>12}" for m in names))
        for i, t in enumerate(first["tasks"]):
            print(f"{t['label']:<34} {t['rows']:>6}" +
                  "".join(f" {modes[m][0]['tasks'][i]['accuracy']:>12.4f}" for m in names))
    for m in names:
        wall, cpu = modes[m][1]
        print(f"{m}: whole command {wall:.1f} s wall, {cpu:.1f} s CPU; {modes[m][0]['metric']} = "
              f"{modes[m][0]['core']:.6f}")
if os.path.exists(os.path.join(out, "bpb.json")):
    b = json.load(open(os.path.join(out, "bpb.json")))
    wall, cpu = timing("bpb")
    print(f"\nval_bpb {b['val_bpb']:.6f} over {b['targets']} targets ({b['rows']} rows of {b['sequence_len']}): "
          f"evaluator {b['seconds']:.1f} s; whole command {wall:.1f} s wall, {cpu:.1f} s CPU")
print(f"\n(results and timings in {out})")
EOF
