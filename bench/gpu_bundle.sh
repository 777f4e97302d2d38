#!/usr/bin/env bash
# Prepares what bench/gpu_check.sh runs on the GPU machine, which has nvcc, CMake and PyTorch but
# not the project's C++ dependencies (toml++, CLI11, yaml-cpp, utf8proc, OpenBLAS, oneDNN, GoogleTest,
# ...), and no network. So the binaries are built HERE and carried:
#
#   .gpu_bundle/bin/       test_backend_cuda (parity tests), backend_ops_bench, and when built,
#                          train_throughput_bench, clocktrain: each stripped and xz-compressed
#                          (NAME.xz; bench/gpu_check.sh unpacks them): 6 MiB instead of 37
#   .gpu_bundle/lib.tar.xz every shared library they load that is not glibc's, libstdc++/libgcc
#                          (the image has g++ for nvcc) or CUDA's own (the image's toolkit and
#                          PyTorch's wheels bring cuBLASLt and NCCL); OpenBLAS too (dlopen'ed)
#   .gpu_bundle/MANIFEST   commit, build flags, sha256 of every file
#
# Built portable (CLOCKTRAIN_NATIVE=OFF: the device's CPU may lack this one's AVX-512 extensions),
# CUDA code for sm_90a (cmake/Cuda.cmake), without Parquet input (CLOCKTRAIN_PARQUET=OFF: the
# device reads prepared shards, and pyarrow's libraries would add 14 MiB). The folder is ignored by
# git (.git/info/exclude) and travels with the device call through its `carry` list:
# run(command="bash bench/gpu_check.sh", carry=[".gpu_bundle"], timeout_s=540). Keep it under the
# 64 MiB a call may carry (checked below).
#
# usage: bench/gpu_bundle.sh            (env: BUILD=build/gpu-bundle, JOBS=2)
#   PACKAGE_ONLY=1 BUILD=build/release bench/gpu_bundle.sh: package what BUILD already holds, without
#   configuring or building (a dry run of the packaging; a native build may not run on the device's
#   CPU, and the MANIFEST says which build it came from)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/gpu-bundle}
jobs=${JOBS:-2}
package_only=${PACKAGE_ONLY:-0}
bundle=.gpu_bundle

if [ "$package_only" != 1 ]; then
  # the CUDA backend's cuDNN attention is compiled only with these headers (cmake/CudnnFrontend.cmake)
  ./scripts/install-cudnn-frontend.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLOCKTRAIN_NATIVE=OFF -DCLOCKTRAIN_TESTS=ON \
    -DCLOCKTRAIN_BENCH=ON -DCLOCKTRAIN_CUDA=ON -DCLOCKTRAIN_PARQUET=OFF >/dev/null
fi
known_targets=$(cmake --build "$build" --target help)
echo "$known_targets" | grep -q "ct_backend_cuda" ||
  { echo "gpu_bundle: nvcc was not found: no CUDA backend to bundle" >&2; exit 1; }
wanted="test_backend_cuda backend_ops_bench train_throughput_bench clocktrain"
targets=""
for t in $wanted; do
  if echo "$known_targets" | grep -q "^\.\.\. $t\$"; then targets="$targets $t"; fi
done
if [ "$package_only" != 1 ]; then
  echo "gpu_bundle: building$targets (-j$jobs)" >&2
  cmake --build "$build" -j"$jobs" --target $targets
fi

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/staging"
for t in $targets; do
  f=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] && cp "$f" "$bundle/bin/"
done
# Shared libraries: everything ldd resolves except the C runtime, the C++ runtime and CUDA's.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libmvec|libcublas|libcudart|libcuda\.|libnccl)'
for f in "$bundle"/bin/*; do
  ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if ! echo "$name" | grep -Eq "$skip"; then cp -L "$path" "$bundle/staging/$name"; fi
done
# symbols the device never needs (no debugger there), then xz: what a device call carries is capped
for f in "$bundle"/bin/*; do
  strip --strip-unneeded "$f" && xz -T"$jobs" -6 "$f"
done
openblas=$(grep -o 'CLOCKTRAIN_OPENBLAS_PATH="[^"]*"' -r "$build/src/backend/cpu/CMakeFiles" 2>/dev/null | head -1 |
  sed 's/.*="\(.*\)"/\1/' || true)
openblas=${openblas:-/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0}
[ -f "$openblas" ] && cp -L "$openblas" "$bundle/staging/libopenblas.so.0"
(cd "$bundle/staging" && ls) >"$bundle/LIBS"
tar -cJf "$bundle/lib.tar.xz" -C "$bundle/staging" .
rm -rf "$bundle/staging"
{
  echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- src tests bench || echo ' (with uncommitted changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "nvcc $(nvcc --version | grep -o 'release [0-9.]*'), gencode $(grep CLOCKTRAIN_CUDA_GENCODE: "$build/CMakeCache.txt" | cut -d= -f2-)"
  echo "build $build, $(grep '^CLOCKTRAIN_NATIVE:' "$build/CMakeCache.txt" || echo 'CLOCKTRAIN_NATIVE unset')$([ "$package_only" = 1 ] && echo ', packaged only (PACKAGE_ONLY=1)')"
  echo "cuDNN attention: $(grep -q 'CT_HAVE_CUDNN_FRONTEND' "$build/src/backend/cuda/CMakeFiles/ct_backend_cuda.dir/flags.make" 2>/dev/null &&
    echo "built (frontend $(cat build/cudnn-frontend/VERSION 2>/dev/null || echo '?'))" || echo 'not built')"
  (cd "$bundle" && sha256sum bin/* lib.tar.xz)
} >"$bundle/MANIFEST"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx "/$bundle/" "$exclude" 2>/dev/null || echo "/$bundle/" >>"$exclude"
size_kib=$(du -sk "$bundle" | cut -f1)
echo "gpu_bundle: $bundle is $((size_kib / 1024)) MiB: $(ls "$bundle/bin" | tr '\n' ' ')" >&2
[ "$size_kib" -lt $((56 * 1024)) ] || { echo "gpu_bundle: over 56 MiB, too big to carry with the tree" >&2; exit 1; }
