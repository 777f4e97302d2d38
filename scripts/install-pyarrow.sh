#!/usr/bin/env bash
# Installs PyPI's pyarrow wheel, pinned and checked against its SHA-256, into the project's own venv
# build/pyarrow-venv (never the system python3). Its libarrow/libparquet and headers give clocktrain
# Parquet input (cmake/Parquet.cmake finds them when `cmake --preset ...` configures; Debian 12 has no
# libparquet-dev), and the tests write their Parquet fixtures with it.
#
#   scripts/install-pyarrow.sh build [VENV]   pyarrow alone: what the build needs (install-deps.sh build,
#                                             README.md's main command)
#   scripts/install-pyarrow.sh [all] [VENV]   and tensorboard 2.20.0, the reader that the TensorBoard test
#                                             checks the run's event files with (tests/train/event_file_test.cpp)
#
# VENV defaults to build/pyarrow-venv. Needs python3-venv and PyPI. Does nothing when the venv already
# holds these versions.
set -euo pipefail
cd "$(dirname "$0")/.."
set_name=${1:-all}
case "$set_name" in
  build | all) ;;
  *) echo "install-pyarrow.sh: unknown set '$set_name' (build or all)" >&2; exit 2 ;;
esac
venv=${2:-build/pyarrow-venv}
version=21.0.0  # manylinux_2_28 wheel: new C++ ABI, GLIBCXX_3.4.22 (cmake/Parquet.cmake)
# The wheel for Debian 12's python3.11 on x86-64, pyarrow-21.0.0-cp311-cp311-manylinux_2_28_x86_64.whl
# (42,823,810 bytes); pyarrow 21 depends on no other package.
sha256=40ebfcb54a4f11bcde86bc586cbd0272bac0d516cfa539c799c2453768477569
tensorboard_version=2.20.0

installed() {  # installed MODULE VERSION: the venv imports MODULE at VERSION
  [ -x "$venv/bin/python3" ] &&
    "$venv/bin/python3" -c "import sys, $1; sys.exit($1.__version__ != '$2')" 2>/dev/null
}

[ -x "$venv/bin/python3" ] || /usr/bin/python3 -m venv "$venv"
# python3 -m pip, not bin/pip: a venv copied from another checkout keeps bin/pip's first line, which
# names the other checkout's python3, and would install there.
pip=("$venv/bin/python3" -m pip install --quiet --disable-pip-version-check)
if ! installed pyarrow "$version"; then
  requirements=$(mktemp)
  trap 'rm -f "$requirements"' EXIT
  echo "pyarrow==$version --hash=sha256:$sha256" >"$requirements"
  # --require-hashes: pip refuses a wheel whose SHA-256 is not the pinned one; --only-binary: never a
  # source build.
  "${pip[@]}" --require-hashes --no-deps --only-binary=:all: -r "$requirements"
fi
if [ "$set_name" = all ] && ! installed tensorboard "$tensorboard_version"; then
  "${pip[@]}" "tensorboard==$tensorboard_version"
fi
"$venv/bin/python3" -c "import pyarrow
print('pyarrow', pyarrow.__version__, 'in $venv')"
