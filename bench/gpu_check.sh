#!/usr/bin/env bash
# The one device check of the CUDA backend, for a GPU machine reached through the workplace's
# device tool (docs/cuda.md "Checking on a GPU"). The GPU machine cannot build the project (its
# image lacks the C++ dependencies and has no network), so the binaries are built on the build
# machine with the same nvcc (bench/gpu_bundle.sh) and carried; the data for the timed run too
# (bench/gpu_data.sh). Two calls, each under the device tool's 10-minute limit:
#
#   bash bench/gpu_check.sh          (carry [".gpu_bundle"], timeout_s 540): the check, < 8 minutes
#   bash bench/gpu_check.sh run      (carry [".gpu_bundle/bin/clocktrain.xz", ".gpu_bundle/lib.tar.xz",
#                                    ".gpu_bundle/MANIFEST", ".gpu_data"], timeout_s 480): a timed
#                                    baseline run (3 minutes of training clock), then val_bpb and
#                                    CORE (--max-per-task 500) of its checkpoint, into result.json
#
# The check's stages, each with its own timeout; logs under $OUT (setup.log, parity.log, ops.log,
# train.log, torch.log, sanitizer.log, results.json, summary.txt: the 8 files a device call brings back):
#   env       GPU, driver, OS, CPU, PyTorch; the bundle's MANIFEST                     (20 s)
#   libs      unpack the bundle's libraries, find cuBLASLt/NCCL, check every binary loads (40 s)
#   parity    test_backend_cuda: every op forward/backward against the CPU backend (f32 within
#             1e-4, bf16 within 1e-2), graph regions, determinism; the whole model's loss and
#             gradients on a small shape, a 50-step run tracking the CPU's loss curve, the
#             data-parallel path on this one GPU through NCCL (CLOCKTRAIN_NCCL_ONE_RANK=1: a
#             communicator of one rank; eager and graphed steps bit-equal to those without it)  (150 s)
#   ops       backend_ops_bench: matmul and copy ceilings, each op at baseline shapes, and
#             attention again with cuDNN's kernels (--also-attention cudnn) beside it           (60 s)
#   train     train_throughput_bench on recipes/baseline-cuda.toml (matmul_precision bf16, graphs),
#             then without graphs, with fp8 MLP products, eager with every op timed, and with
#             cuDNN's attention (--attention cudnn) graphed and op-timed (140 s)
#   torch     bench/torch_gpu_reference.py: the same model in PyTorch + torch.compile    (160 s)
#   plan      clocktrain plan --backend cuda: the candidate depths' step times here and the plan for
#             30 minutes on this GPU (docs/plan.md), if time is left; appended to train.log (70 s)
#   sanitizer compute-sanitizer memcheck over a few kernels, only if time is left         (45 s)
#   report    the table, printed LAST: tokens/s, step time, MFU vs 989 TFLOP/s and vs the
#             measured matmul peak, memory, clocktrain vs PyTorch
# The whole check stays under 8 minutes (GPU_CHECK_BUDGET, default 470 s): a stage that would start
# with too little time left is skipped (and says so).
#
# The run's stages (GPU_RUN_BUDGET: training-clock seconds, default 180); files under $OUT:
# setup.log, train.log, bpb.log, core.log, result.json, summary.txt:
#   env, libs as above; data (unpack .gpu_data's val/ and eval_bundle/); train (clocktrain train
#   recipes/baseline-cuda.toml --budget 180 on the carried shards); bpb (clocktrain eval bpb);
#   core (clocktrain eval core --max-per-task 500); result (result.json: the gate-relevant facts
#   from train_summary.json, val_bpb and CORE as the evaluator computed them from the checkpoint).
#
# Dry run without a GPU (argument parsing, stage plumbing, the report): GPU_CHECK_DRY_RUN=1.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
case "$mode" in
  check | run) ;;
  *) echo "usage: bash bench/gpu_check.sh [check|run]   (docs/cuda.md)" >&2; exit 2 ;;
esac
start_seconds=$(date +%s)
if [ "$mode" = run ]; then budget_seconds=${GPU_RUN_LIMIT:-450}; else budget_seconds=${GPU_CHECK_BUDGET:-470}; fi
run_budget=${GPU_RUN_BUDGET:-180}
dry_run=${GPU_CHECK_DRY_RUN:-0}
OUT=${OUT:-$(mktemp -d /tmp/gpu_check.XXXXXX)}
work=/tmp/clocktrain-gpu-check
rm -rf "$work"
mkdir -p "$OUT" "$work"
bundle=.gpu_bundle
bin=$work/bin
status_file=$work/stages.txt
export work bundle bin
: >"$status_file"
# The bundle's binaries travel xz-compressed (bench/gpu_bundle.sh); python3's lzma unpacks them (the
# image may lack xz).
mkdir -p "$bin"
for f in "$bundle"/bin/*.xz; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .xz)
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "$bin/$name" && chmod +x "$bin/$name"
done

elapsed() { echo $(($(date +%s) - start_seconds)); }
left() { echo $((budget_seconds - $(elapsed))); }
# stage NAME TIMEOUT COMMAND...: runs with a timeout (shortened to the time left), output to
# $work/NAME.log, one status line to stdout and to the stage list.
stage() {
  local name=$1 limit=$2
  shift 2
  local remaining
  remaining=$(left)
  if [ "$remaining" -lt 15 ]; then
    echo "stage $name: skipped (only ${remaining}s of the budget left)" | tee -a "$status_file"
    return 99
  fi
  [ "$limit" -gt "$remaining" ] && limit=$remaining
  local t0 rc
  t0=$(date +%s)
  echo "== $name (timeout ${limit}s, at $(elapsed)s)"
  if [ "$dry_run" = 1 ]; then
    echo "dry run: $*" >"$work/$name.log"
    echo "stage $name: dry run ($*)" | tee -a "$status_file"
    return 0
  fi
  if declare -F "$1" >/dev/null; then  # a function of this script: run it in a child bash
    timeout --kill-after=5 "$limit" bash -c "$(declare -f "$1"); $(printf '%q ' "$@")" >"$work/$name.log" 2>&1
  else
    timeout --kill-after=5 "$limit" "$@" >"$work/$name.log" 2>&1
  fi
  rc=$?
  local verdict=ok
  [ $rc -ne 0 ] && verdict="FAILED rc=$rc"
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && verdict="TIMED OUT after ${limit}s"
  echo "stage $name: $verdict in $(($(date +%s) - t0))s" | tee -a "$status_file"
  return $rc
}

# ---- env ----
env_report() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv || true
  echo "os: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), $(ldd --version | head -1)"
  echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 || true
  if command -v cuobjdump >/dev/null && [ -x "$bin/test_backend_cuda" ]; then
    echo "--- machine code in test_backend_cuda (tensor-core mma, ldmatrix, cp.async instruction counts):"
    cuobjdump --list-elf "$bin/test_backend_cuda" 2>&1 | head -3
    cuobjdump --dump-sass "$bin/test_backend_cuda" 2>/dev/null | grep -oE '\b(HMMA|HGMMA|LDSM|LDGSTS)\b' | sort | uniq -c
  fi
  echo "--- bundle"
  cat "$bundle/MANIFEST" 2>/dev/null || echo "no $bundle/MANIFEST: run bench/gpu_bundle.sh on the build machine and carry .gpu_bundle"
}
stage env 20 env_report

# ---- libs ----
setup_libs() {
  ls "$bin"/* >/dev/null 2>&1 || { echo "no binaries in $bundle/bin: run bench/gpu_bundle.sh on the build machine and carry .gpu_bundle"; return 1; }
  mkdir -p "$work/lib-all" "$work/lib"
  tar -xJf "$bundle/lib.tar.xz" -C "$work/lib-all" || python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$bundle/lib.tar.xz" "$work/lib-all"
  # Use the image's own copy of a library when it has one; the bundle's otherwise.
  for f in "$work"/lib-all/*; do
    name=$(basename "$f")
    if ldconfig -p | grep -q "^[[:space:]]*$name "; then echo "system: $name"; else ln -sf "$f" "$work/lib/$name"; echo "bundle: $name"; fi
  done
  # cuBLASLt, NCCL, cuDNN (opened at run time by backend.attention "cudnn") and NVRTC (which
  # cuDNN's runtime-compiled engines need): the CUDA toolkit's, else PyTorch's wheels'.
  local dirs=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
    [ -e "$d/libcublasLt.so.13" ] && dirs="$dirs:$d"
  done
  for module in nvidia.cublas nvidia.nccl nvidia.cu13 nvidia.cuda_runtime nvidia.cudnn nvidia.cuda_nvrtc; do
    d=$(python3 -c "import $module, os; print(os.path.dirname($module.__file__ or list($module.__path__)[0]))" 2>/dev/null || true)
    [ -n "$d" ] && for sub in lib lib64; do [ -d "$d/$sub" ] && dirs="$dirs:$d/$sub"; done
  done
  echo "export LD_LIBRARY_PATH=$work/lib$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" >"$work/env.sh"
  echo "export CLOCKTRAIN_OPENBLAS=$work/lib-all/libopenblas.so.0" >>"$work/env.sh"
  cat "$work/env.sh"
  . "$work/env.sh"
  local missing=0
  for f in "$bin"/*; do
    if ldd "$f" | grep -q "not found"; then echo "MISSING for $f:"; ldd "$f" | grep "not found"; missing=1; fi
  done
  return $missing
}
stage libs 40 setup_libs
[ -f "$work/env.sh" ] && . "$work/env.sh"

# ---- the timed run (mode run) ----
if [ "$mode" = run ]; then
  data=.gpu_data
  run_dir=$work/run
  export data run_dir run_budget
  unpack_data() {
    [ -f "$data/prepared/manifest.json" ] && [ -f "$data/raw.tar.xz" ] ||
      { echo "no $data: run bench/gpu_data.sh on the build machine and carry .gpu_data"; return 1; }
    cat "$data/prepared/SUBSET.txt"
    mkdir -p "$work/raw"
    tar -xJf "$data/raw.tar.xz" -C "$work/raw" && ls "$work/raw" "$work/raw/val"
  }
  stage data 30 unpack_data
  # the training clock is --budget; startup (capped by the recipe) and the final save come on top
  stage train $((run_budget + 150)) "$bin/clocktrain" train recipes/baseline-cuda.toml --budget "$run_budget" \
    --data "$data/prepared" --out "$run_dir" --no-progress
  stage bpb 60 "$bin/clocktrain" eval bpb "$run_dir/checkpoint" --data "$work/raw" --backend cuda --out "$work/bpb.json"
  stage core 150 "$bin/clocktrain" eval core "$run_dir/checkpoint" --data "$work/raw" --bundle "$work/raw/eval_bundle" \
    --max-per-task 500 --backend cuda --out "$work/core.json"
  cat "$work/env.log" "$work/libs.log" "$work/data.log" >"$OUT/setup.log" 2>/dev/null
  for name in train bpb core; do
    [ -f "$work/$name.log" ] && cp "$work/$name.log" "$OUT/$name.log"
  done
  python3 bench/gpu_report.py --run "$work" "$OUT/result.json" | tee "$OUT/summary.txt"
  echo "(whole run: $(elapsed)s; logs and result.json under \$OUT)"
  exit 0
fi

# ---- parity ----
parity() {
  local rc=0
  "$bin/test_backend_cuda" --gtest_output="json:$work/parity.json" || rc=$?
  # a failed fp8 product: again with cuBLASLt's own log (level 5: every call and its arguments),
  # which says why it refused
  if grep -q '"failures"' "$work/parity.json" 2>/dev/null && grep -q 'CUBLAS_STATUS' "$work/parity.json"; then
    echo "--- CudaGemm.Fp8* again with CUBLASLT_LOG_LEVEL=5"
    CUBLASLT_LOG_LEVEL=5 "$bin/test_backend_cuda" --gtest_filter='CudaGemm.Fp8*' 2>&1 | tail -80
  fi
  return $rc
}
stage parity 150 parity

# ---- ops ----
stage ops 60 "$bin/backend_ops_bench" --backend cuda --matmul-precision bf16 --dtype bf16 --repeats 10 \
  --also-attention cudnn --json "$work/ops.json"

# ---- train ----
# The baseline recipe's step on the GPU (recipes/baseline-cuda.toml: bf16, one micro-batch of 64 x
# 1024, graph regions), then the same without graphs, with fp8 MLP products, and eager with each op
# timed (--profile-ops); then graphed and op-timed with cuDNN's attention: six JSON lines.
train_runs() {
  "$bin/train_throughput_bench" recipes/baseline-cuda.toml --steps 20 --warmup 3 || return 1
  "$bin/train_throughput_bench" recipes/baseline-cuda.toml --steps 10 --warmup 2 --graphs false
  "$bin/train_throughput_bench" recipes/baseline-cuda.toml --steps 10 --warmup 3 --fp8 true
  # where the eager step goes: every op waited for before and after (its table stays in train.log)
  "$bin/train_throughput_bench" recipes/baseline-cuda.toml --steps 3 --warmup 2 --graphs false --profile-ops 1
  # cuDNN's fused attention in place of the flash kernels (docs/cuda.md "Attention"); its parity
  # tests are CudaAttention.Cudnn* in the parity stage
  "$bin/train_throughput_bench" recipes/baseline-cuda.toml --steps 20 --warmup 3 --attention cudnn
  "$bin/train_throughput_bench" recipes/baseline-cuda.toml --steps 3 --warmup 2 --attention cudnn \
    --graphs false --profile-ops 1
  return 0
}
if [ -x "$bin/train_throughput_bench" ] && [ -f recipes/baseline-cuda.toml ]; then
  stage train 140 train_runs
else
  echo "stage train: skipped (train_throughput_bench not in the bundle: the model's GPU path is not built)" | tee -a "$status_file"
fi

# ---- torch ----
stage torch 160 env PYTHONUNBUFFERED=1 python3 bench/torch_gpu_reference.py --steps 15 --warmup 3 --json "$work/torch.json"

# ---- plan ----
# The planner on the device (docs/plan.md): the candidate depths' step times on this
# GPU and the plan for 30 minutes of training clock here, by the committed loss model. Its JSON (the
# last line of plan.log) is a table of step times: `clocktrain plan --step-times` replans from it on
# any machine.
if [ -x "$bin/clocktrain" ] && [ -f recipes/loss_model.json ]; then
  stage plan 70 "$bin/clocktrain" plan --budget 1800 --backend cuda --depths 8,10,12,14,16,20,26 \
    --measure-seconds 50 --model recipes/loss_model.json --out "$work/planned-gpu.toml" --json
else
  echo "stage plan: skipped (no clocktrain in the bundle or no recipes/loss_model.json)" | tee -a "$status_file"
fi

# ---- sanitizer (optional) ----
if command -v compute-sanitizer >/dev/null && [ "$(left)" -gt 75 ]; then
  stage sanitizer 45 compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/test_backend_cuda" \
    --gtest_filter='CudaAttention.FlashKernelsInBf16:CudaEmbedding.*:CudaCrossEntropy.*:CudaGraphs.ReplayEqualsEager*'
else
  echo "stage sanitizer: skipped ($(left)s left or no compute-sanitizer)" | tee -a "$status_file"
fi

# ---- report (printed last) ----
# (at most 8 files come back from $OUT: env and libs share one)
cat "$work/env.log" "$work/libs.log" >"$OUT/setup.log" 2>/dev/null
# and the plan rides at the end of train.log
[ -f "$work/plan.log" ] && cat "$work/plan.log" >>"$work/train.log"
for name in parity ops train torch sanitizer; do
  [ -f "$work/$name.log" ] && cp "$work/$name.log" "$OUT/$name.log"
done
python3 bench/gpu_report.py "$work" "$OUT/results.json" | tee "$OUT/summary.txt"
echo "(whole check: $(elapsed)s; logs and results.json under \$OUT)"
