#!/usr/bin/env bash
# The whole test flow, as CI runs it (README.md's test command; docs/reliability.md):
#   1. release   a pinned pyarrow into build/pyarrow-venv (scripts/install-pyarrow.sh: Parquet
#                support for the builds below, and the tests' Parquet fixtures) and the pinned
#                cuDNN frontend headers into build/cudnn-frontend (scripts/install-cudnn-frontend.sh:
#                the CUDA backend's cuDNN attention is compiled, and its host tests run), then
#                build (preset release) and every test (ctest)
#   2. asan      build everything with clang, AddressSanitizer + UndefinedBehaviorSanitizer (preset
#                fuzz, which also holds the fuzz targets: one sanitizer build serves stages 2 and 3)
#                and run the unit tests under them; tests labelled `python` (which re-run C++ paths
#                against a python3 subprocess) are left out unless CLOCKTRAIN_ASAN_PYTHON=1, and so
#                are the avx2/ copies of the tests (label avx2, docs/cpu.md) and the mpirun tests
#                (label mpi, docs/parallel.md).
#                ASAN_PRESET=asan uses GCC's sanitizers instead (preset asan, a separate build).
#   3. fuzz      run each libFuzzer target for a short fixed time (scripts/fuzz.sh ci;
#                FUZZ_CI_SECONDS, default 10; the deep runs are outside CI: docs/reliability.md)
#   4. zen3      build for AMD Zen 3 (preset zen3: -march=znver3, no AVX-512) and run the kernel,
#                model, optimizer, evaluator tests and one training run under QEMU posing as an
#                EPYC-Milan, whose CPUID has no AVX-512 (scripts/emulated-cpu-test.sh, docs/cpu.md):
#                the AVX2-only CPU that no development or CI machine is
# Usage: scripts/test.sh [STAGE...]   (default: release asan fuzz zen3). Dependencies come from
# scripts/install-deps.sh. Prints the wall and CPU seconds of every stage; exits non-zero at the
# first stage that fails.
set -euo pipefail
cd "$(dirname "$0")/.."

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(release asan fuzz zen3)
jobs=${JOBS:-2}
# The test command installs every Python reference first (scripts/install-deps.sh): here a test that
# lacks one fails instead of skipping (tests/test_support.h, CT_NEED_PYTHON_MODULES).
export CLOCKTRAIN_TESTS_COMPLETE=${CLOCKTRAIN_TESTS_COMPLETE:-1}

# (Each stage chains its commands with &&: `set -e` does not apply inside `stage || rc=$?`.)
run_release() {
  ./scripts/install-pyarrow.sh && ./scripts/install-cudnn-frontend.sh && cmake --preset release && cmake --build --preset release -j"$jobs" && ctest --preset release
}

run_asan() {
  local preset=${ASAN_PRESET:-fuzz}
  cmake --preset "$preset" && cmake --build --preset "$preset" -j"$jobs" || return $?
  # The avx2/ copies of the tests (the same code at CLOCKTRAIN_CPU_MAX_ISA=avx2) run in the release
  # stage only: under the sanitizers they would add ~5 minutes for paths that an AVX2 machine's CI
  # runs natively.
  # The mpi tests (data-parallel runs under mpirun) run in the release stage only: Open MPI's
  # allocations at exit are reported as leaks under LeakSanitizer.
  local exclude=(-LE '^(python|avx2|mpi)$')
  if [ "${CLOCKTRAIN_ASAN_PYTHON:-0}" = 1 ]; then exclude=(-LE '^(avx2|mpi)$'); fi
  # halt_on_error: the first report fails the test; detect_leaks: leaks are reports too.
  ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest --preset "$preset" "${exclude[@]}"
}

run_fuzz() {
  JOBS=$jobs ./scripts/fuzz.sh ci
}

run_zen3() {
  cmake --preset zen3 && cmake --build --preset zen3 -j"$jobs" && ./scripts/emulated-cpu-test.sh build/zen3
}

summary=()
for stage in "${stages[@]}"; do
  case "$stage" in
    release | asan | fuzz | zen3) ;;
    *) echo "test.sh: unknown stage '$stage' (release, asan, fuzz, zen3)" >&2; exit 2 ;;
  esac
  echo "==== stage $stage"
  cpu_before=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  start=$(date +%s)
  rc=0
  "run_$stage" || rc=$?
  wall=$(($(date +%s) - start))
  # CPU seconds of the stage's finished children (clock ticks of the shell's cutime + cstime).
  cpu=$(awk -v before="$cpu_before" -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($14 + $15 + $16 + $17 - before) / hz}' /proc/$$/stat)
  summary+=("$(printf '%-8s %6d s wall %7d s CPU  %s' "$stage" "$wall" "$cpu" "$([ $rc = 0 ] && echo passed || echo "FAILED ($rc)")")")
  if [ $rc != 0 ]; then
    printf '%s\n' "==== summary" "${summary[@]}"
    exit $rc
  fi
done
printf '%s\n' "==== summary (load average: $(cut -d' ' -f1-3 /proc/loadavg))" "${summary[@]}"
