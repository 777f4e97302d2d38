#!/usr/bin/env bash
# Installs every dependency of clocktrain from Debian 12's packages (run as root).
# Build: compilers, CMake, the libraries linked in. Tests: the system python3 with torch, regex,
# yaml, jinja2, numpy and scipy as independent references; sentencepiece for the tokenizer bench.
# ocl-icd-opencl-dev: Debian's oneDNN CMake config (built with its OpenCL GPU runtime) requires
# OpenCL, which libdnnl-dev only recommends.
# Fuzzing and the sanitizer build: clang with its runtimes (libFuzzer, ASan, UBSan) and OpenMP.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git ca-certificates
  libopenblas-dev libopenblas0-openmp libdnnl-dev ocl-icd-opencl-dev
  libzstd-dev zlib1g-dev libssl-dev libsqlite3-dev
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libyaml-cpp-dev libutf8proc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev libomp-dev
  python3 python3-torch python3-regex python3-yaml python3-jinja2 python3-numpy python3-scipy
  sentencepiece zstd
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
