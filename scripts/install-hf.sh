#!/usr/bin/env bash
# Installs Hugging Face's transformers, safetensors and tokenizers from PyPI, at pinned versions, into the
# project's venv build/hf-venv, made over Debian 12's python3 (--system-site-packages: its torch 1.13,
# numpy, regex and yaml serve them). The test that reads a checkpoint folder with them
# (tests/train/hf_interop_test.cpp, tests/python/hf_check.py) runs that venv's python3.
#
#   scripts/install-hf.sh [VENV]     VENV defaults to build/hf-venv
#
# Needs python3-venv and PyPI. Does nothing when the venv already holds these versions. Test-only: the
# clocktrain binary uses none of it (README.md's test command runs it through scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/hf-venv}
# transformers 4.46.3 works over Debian 12's torch 1.13 (the test passes with it); the others are what
# it resolved to, pinned so that every machine reads the files with the same code.
packages=(transformers==4.46.3 tokenizers==0.20.3 safetensors==0.8.0 huggingface_hub==0.36.2)

[ -x "$venv/bin/python3" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
if ! "$venv/bin/python3" -c "
import sys, transformers, tokenizers, safetensors, huggingface_hub
sys.exit([m.__version__ for m in (transformers, tokenizers, safetensors, huggingface_hub)] !=
         ['4.46.3', '0.20.3', '0.8.0', '0.36.2'])" 2>/dev/null; then
  # python3 -m pip, not bin/pip (a copied venv's bin/pip names another checkout's python3).
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check --only-binary=:all: "${packages[@]}"
fi
"$venv/bin/python3" -c "import transformers, tokenizers, safetensors, torch
print('transformers', transformers.__version__, 'tokenizers', tokenizers.__version__, 'safetensors',
      safetensors.__version__, 'over torch', torch.__version__, 'in $venv')" 2>/dev/null
