#!/usr/bin/env bash
# The build an AVX2-only CPU makes, run on a CPU that says it is one: clocktrain compiled for AMD Zen 3
# (-march=znver3, what `-march=native` gives there: AVX2 and FMA, no AVX-512 anywhere in the binary)
# and its tests run under QEMU's user-mode emulator posing as an EPYC-Milan (Zen 3), whose CPUID has no
# AVX-512. What CLOCKTRAIN_CPU_MAX_ISA=avx2 cannot show on a bigger CPU, this does: that the binary
# holds no instruction beyond the CPU's (QEMU 7.2 emulates AVX2 and FMA but no AVX-512: one is a
# SIGILL), that clocktrain and the libraries (oneDNN's JIT, OpenBLAS, BLIS) choose their AVX2 code from
# CPUID alone, and that the kernels, the model, the optimizer, the evaluators and a training run give
# the tests' answers there. Correctness only: emulated code runs ~100x slower, so nothing here is timed.
#
# usage: scripts/emulated-cpu-test.sh [BUILD]     (default build/zen3: `cmake --preset zen3 && cmake
#        --build --preset zen3`; scripts/test.sh's stage zen3 does both, then this)
# env:   QEMU_CPU (default EPYC-Milan; Haswell-v4 for an Intel client core built with -march=haswell)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/zen3}
cpu=${QEMU_CPU:-EPYC-Milan}
command -v qemu-x86_64 > /dev/null || { echo "emulated-cpu-test: qemu-x86_64 not found (Debian's qemu-user: scripts/install-deps.sh)" >&2; exit 1; }
for binary in tests/test_backend tests/test_model tests/test_optim tests/test_eval tests/test_train; do
  [ -x "$build/$binary" ] || { echo "emulated-cpu-test: missing $build/$binary (cmake --preset zen3 && cmake --build --preset zen3)" >&2; exit 1; }
done
# The image of one development machine sets OPENBLAS_CORETYPE for every program: left set, OpenBLAS
# would not choose from CPUID. CLOCKTRAIN_CPU_MAX_ISA would lower the level by hand: the point is not to.
unset OPENBLAS_CORETYPE BLIS_ARCH_TYPE CLOCKTRAIN_CPU_MAX_ISA
# As ctest runs them (tests/CMakeLists.txt; the data folder, python and binary default as there).
export OMP_NUM_THREADS=2
emulate() { qemu-x86_64 -cpu "$cpu" "$@" 2> >(grep -v "TCG doesn't support requested feature" >&2); }

# The emulated CPU is an AVX2-only one, and clocktrain's CPU detection (the code `clocktrain version`
# prints from) sees it so: the level test prints the level and flags it found.
level=$(emulate "$build/tests/test_backend" --gtest_filter=CpuLevel.TheCpusLevelHasEveryFeatureOfTheLevelsBelow)
grep ': level' <<< "$level"
grep -q "level avx2, flags avx2 fma -avx512f" <<< "$level" || { echo "emulated-cpu-test: expected the CPU level avx2 with no avx512f from CPUID under '$cpu'" >&2; exit 1; }

# Left out: the two tests that put a PROT_NONE page right after an array to show that a masked AVX2
# load never touches the elements its mask leaves out. Hardware does not fault on masked-off elements;
# QEMU 7.2 loads the whole operand and then masks it, so under it those tests crash where a real CPU
# passes them.
guard_tests="CrossEntropy.FastKernelNeverTouchesPastTheLastLogit:F32TileGemm.RowMajorBIsNeverReadPastItsLastColumn"
# Left out for time (under QEMU on the AMX Xeon of 2026-12-07 they took 208, 55 and 69 s, beside a
# build): the two attention tests whose cost is float64 finite differences (portable code,
# the same at every CPU level; the f32 attention kernels of the AVX2 level stay checked here by the
# other Attention tests), and the bf16 attention test, whose path an AVX2 CPU never trains on (a recipe
# that asks for bf16 there is refused). And test_optim's 200-step overfitting run (275 s there): the
# emulated training run below takes the same ops through 12 steps and checks that the loss falls. All
# four run natively in the release stage, and there at the AVX2 level too (their avx2/ copies).
slow_tests="Attention.HeadDimsAcrossPanelsAndKeyBlocks:Attention.GroupedQueryHeadsAcrossBlocks:Bf16Attention.TiledKernelsMatchF64"
slow_tests+=":Optimizer.TinyModelOverfitsOneBatch"
run() {
  local binary=$1 filter=$2 start=$SECONDS
  echo "== $binary --gtest_filter=$filter"
  emulate "$build/tests/$binary" --gtest_brief=1 --gtest_filter="$filter"
  echo "== $binary: passed in $((SECONDS - start)) s"
}
# One whole training run (12 steps of the tests' tiny model, held-out evaluations, the checkpoint):
# the trainer's other tests would take far longer emulated. At 30 steps it took ~2.7 minutes under the
# Zen 4's QEMU, and a step took ~42 s under the AMX Xeon's (2026-12-07). The emulated tests keep about one core busy, so the
# training run goes beside the others (its output follows theirs).
train_log=$(mktemp)
run test_train "TrainerTest.RunByStepsLearnsAndWritesRecords" > "$train_log" 2>&1 &
train_pid=$!
# A failure of the others ends the script (set -e): the training run goes with it.
trap 'kill "$train_pid" 2> /dev/null || true; rm -f "$train_log"' EXIT
run test_backend "-$guard_tests:$slow_tests"
run test_model "*"
run test_optim "-$slow_tests"
run test_eval "*"
train_rc=0
wait "$train_pid" || train_rc=$?
cat "$train_log"
[ "$train_rc" = 0 ] || { echo "emulated-cpu-test: test_train failed ($train_rc)" >&2; exit "$train_rc"; }
echo "emulated-cpu-test: every test passed on the emulated $cpu"
