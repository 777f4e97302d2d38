#!/usr/bin/env bash
# Installs clocktrain's dependencies from Debian 12's packages, and the one library Debian lacks (Arrow's
# Parquet) from PyPI's pinned, checksummed pyarrow wheel (run as root).
#
#   scripts/install-deps.sh build   what `cmake --preset release` and the clocktrain binary need: the
#                                   compilers, CMake, the libraries linked or loaded, the headers of
#                                   GoogleTest and Google Benchmark (so that configuring is the same
#                                   for every use of build/release), and the pinned pyarrow wheel whose
#                                   C++ libraries read Parquet (scripts/install-pyarrow.sh build, into
#                                   build/pyarrow-venv; Debian 12 has no libparquet-dev): README.md's
#                                   main command
#   scripts/install-deps.sh [all]   the above and what the tests, the sanitizer build and the fuzzers
#                                   add (with Hugging Face's transformers, tokenizers and safetensors
#                                   in build/hf-venv: scripts/install-hf.sh): the test command
#
# Build: libcurl4-openssl-dev for `clocktrain data download`. libblis4-openmp is BLIS, the f32
# GEMM library that competes with OpenBLAS (loaded at run time, src/backend/cpu/gemm_library.h).
# ocl-icd-opencl-dev: Debian's oneDNN CMake config (built with its OpenCL GPU runtime) requires
# OpenCL, which libdnnl-dev only recommends. libopenmpi-dev and openmpi-bin: Open MPI, the
# collectives and the launcher (mpirun) of data-parallel CPU processes; libgloo-dev: Gloo, their
# collectives when torchrun starts them. python3-venv: the project's venv for pyarrow's Parquet
# libraries (scripts/install-pyarrow.sh).
# Tests: the system python3 with torch, regex, yaml, jinja2, numpy and scipy as independent
# references; sentencepiece for the tokenizer bench; clang with its runtimes (libFuzzer, ASan, UBSan)
# and OpenMP for fuzzing and the sanitizer build; zstd for test fixtures; tensorboard in the
# pyarrow venv (scripts/install-pyarrow.sh all: the event-file test's reader); qemu-user, whose
# x86-64 emulator poses as a CPU without AVX-512 (scripts/emulated-cpu-test.sh).
set -euo pipefail
set_name=${1:-all}
build_packages=(
  build-essential cmake pkg-config git ca-certificates
  libopenblas-dev libopenblas0-openmp libblis4-openmp libdnnl-dev ocl-icd-opencl-dev
  libzstd-dev zlib1g-dev libssl-dev libsqlite3-dev libcurl4-openssl-dev libopenmpi-dev openmpi-bin libgloo-dev
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libyaml-cpp-dev libutf8proc-dev
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-venv
)
test_packages=(
  clang libclang-rt-14-dev libomp-dev
  python3-torch python3-regex python3-yaml python3-jinja2 python3-numpy python3-scipy
  sentencepiece zstd qemu-user
)
case "$set_name" in
  build) packages=("${build_packages[@]}") ;;
  all) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps.sh: unknown set '$set_name' (build or all)" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# The venvs live in the checkout (build/pyarrow-venv, build/hf-venv), not in the system's python.
"$(dirname "$0")/install-pyarrow.sh" "$set_name"
if [ "$set_name" = all ]; then "$(dirname "$0")/install-hf.sh"; fi
