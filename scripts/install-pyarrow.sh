#!/usr/bin/env bash
# Installs a pinned pyarrow and a pinned tensorboard from PyPI into the project's own venv,
# build/pyarrow-venv (never the system python3): pyarrow's libarrow/libparquet and headers give
# clocktrain Parquet input (cmake/Parquet.cmake finds them when `cmake --preset ...` configures), and
# the tests write their Parquet fixtures with it; tensorboard is the reader that the TensorBoard test
# checks the run's event files with (tests/train/event_file_test.cpp). The default build needs none
# of this (docs/data.md, "Parquet").
#   scripts/install-pyarrow.sh [VENV]   (default build/pyarrow-venv; needs python3-venv and PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/pyarrow-venv}
version=21.0.0  # manylinux_2_28 wheel: new C++ ABI, GLIBCXX_3.4.22 (cmake/Parquet.cmake)
tensorboard_version=2.20.0
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "import pyarrow, tensorboard, sys
sys.exit(pyarrow.__version__ != '$version' or tensorboard.__version__ != '$tensorboard_version')" 2>/dev/null; then
  exit 0
fi
[ -x "$venv/bin/python3" ] || /usr/bin/python3 -m venv "$venv"
# python3 -m pip, not bin/pip: a venv copied from another checkout keeps bin/pip's first line, which
# names the other checkout's python3, and would install there.
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "pyarrow==$version" \
  "tensorboard==$tensorboard_version"
"$venv/bin/python3" -c "import pyarrow, tensorboard
print('pyarrow', pyarrow.__version__, 'and tensorboard', tensorboard.__version__, 'in $venv')"
