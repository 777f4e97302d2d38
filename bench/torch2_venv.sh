#!/usr/bin/env bash
# The PyTorch 2 that a user installs, in a venv of the benches' own (default build/torch2-venv, under
# the ignored build folder): never on the tests' path, which keep Debian's python3-torch (1.13) as the
# numerical reference, and never needed by the default build. Installs from PyPI once, pinned, and
# again only when the pins below change. Prints the venv's python.
#
# usage: bench/torch2_venv.sh            env: TORCH2_VENV=build/torch2-venv
#
# PyPI's Linux torch wheel is the CUDA build (about 5.4 GiB installed with its nvidia-* wheels, 2 min
# to install here); its CPU kernels (MKL, oneDNN, Inductor's C++ code) are the same as the CPU-only
# wheel's, which only PyTorch's own index serves (not reachable from these machines).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${TORCH2_VENV:-build/torch2-venv}
# torch: the current 2.x when this bench was written; numpy: reference_gpt.py's safetensors I/O;
# regex: tests/python/bpe_reference.py's tokenizer (torch2_checkpoint_check.py).
pins="torch==2.15.0 numpy==2.4.6 regex==2026.11.19"
stamp="$venv/.clocktrain-pins"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$pins" ]; then
  echo "torch2_venv: installing $pins into $venv (PyPI)" >&2
  /usr/bin/python3 -m venv "$venv"
  # shellcheck disable=SC2086  # the pins are separate words
  "$venv/bin/pip" install --quiet --progress-bar off $pins >&2
  echo "$pins" > "$stamp"
fi
echo "$(cd "$venv" && pwd)/bin/python"  # absolute: callers change directory
