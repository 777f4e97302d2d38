#!/usr/bin/env bash
# Puts the headers of a pinned cuDNN frontend (NVIDIA's header-only C++ graph API over cuDNN, which
# Debian does not package) in build/cudnn-frontend/include, taken from PyPI's nvidia-cudnn-frontend
# wheel and checked against its sha256. With them, configuring builds the CUDA backend's cuDNN
# attention (cmake/CudnnFrontend.cmake; CLOCKTRAIN_CUDA_ATTENTION=cudnn, docs/cuda.md "Attention").
# The default build needs none of this, and nothing here is linked: the headers load libcudnn.so.9
# at run time.
#   scripts/install-cudnn-frontend.sh [DIR]   (default build/cudnn-frontend; needs python3-venv and PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/cudnn-frontend}
version=1.32.0
wheel=nvidia_cudnn_frontend-$version-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
sha256=c6006556017a4d1c914c52a556c71b1267f2d6a0500f742e7b4edef539878df0
if [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$version" ] && [ -f "$dir/include/cudnn_frontend.h" ]; then
  exit 0
fi
mkdir -p "$dir"
if [ ! -x "$dir/venv/bin/pip" ]; then /usr/bin/python3 -m venv "$dir/venv"; fi
# The wheel's headers are the same for every python; ask for the one built for Debian 12's 3.11.
"$dir/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 311 --platform manylinux_2_28_x86_64 --dest "$dir" "nvidia-cudnn-frontend==$version"
echo "$sha256  $dir/$wheel" | sha256sum --check --quiet
rm -rf "$dir/include"
/usr/bin/python3 - "$dir/$wheel" "$dir" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith("include/") and not n.endswith("/")]
    if not any(n == "include/cudnn_frontend.h" for n in names):
        sys.exit(f"{wheel}: no include/cudnn_frontend.h in the wheel")
    for n in names:
        z.extract(n, dest)
print(f"cuDNN frontend headers: {len(names)} files in {dest}/include")
PY
rm -rf "$dir/venv" "${dir:?}/$wheel"  # only the headers are kept
echo "$version" > "$dir/VERSION"
