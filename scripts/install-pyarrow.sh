#!/usr/bin/env bash
# Installs a pinned pyarrow from PyPI into the project's own venv, build/pyarrow-venv (never the
# system python3): its libarrow/libparquet and headers give clocktrain Parquet input
# (cmake/Parquet.cmake finds them when `cmake --preset ...` configures), and the tests write their
# Parquet fixtures with it. The default build needs none of this (docs/data.md, "Parquet").
#   scripts/install-pyarrow.sh [VENV]   (default build/pyarrow-venv; needs python3-venv and PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/pyarrow-venv}
version=21.0.0  # manylinux_2_28 wheel: new C++ ABI, GLIBCXX_3.4.22 (cmake/Parquet.cmake)
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "import pyarrow, sys; sys.exit(pyarrow.__version__ != '$version')" 2>/dev/null; then
  exit 0
fi
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "pyarrow==$version"
"$venv/bin/python3" -c "import pyarrow; print('pyarrow', pyarrow.__version__, 'in $venv')"
