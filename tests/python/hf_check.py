"""Hugging Face's own libraries (transformers, safetensors, tokenizers) on a clocktrain checkpoint folder,
for tests/model/hf_interop_test.cpp: what a user of that ecosystem gets from clocktrain's files.

  hf_check.py CHECKPOINT

Prints one JSON object:
  format, clocktrain_format   model.safetensors' metadata as safetensors reads it
  tensors                     {name: {"shape": [...], "sum_squares": float}} of transformers'
                              load_state_dict(model.safetensors), the loader of from_pretrained
  auto_config_error           what transformers' AutoConfig.from_pretrained(CHECKPOINT) raises ("" if nothing)
  tokenizer_json              whether the folder holds a file named tokenizer.json (Hugging Face's name)
  tokenizers_error            what tokenizers.Tokenizer.from_file raises on tokenizer_clocktrain.json
"""

import json
import os
import sys

import torch
from safetensors import safe_open
from tokenizers import Tokenizer
from transformers import AutoConfig
from transformers.modeling_utils import load_state_dict


def error_of(fn):
    try:
        fn()
    except Exception as e:  # the message is the result
        return f"{type(e).__name__}: {e}"
    return ""


def main():
    folder = sys.argv[1]
    weights = os.path.join(folder, "model.safetensors")
    with safe_open(weights, framework="pt") as f:
        metadata = f.metadata() or {}
    state = load_state_dict(weights)
    tensors = {
        name: {"shape": list(t.shape), "sum_squares": float(t.to(torch.float64).pow(2).sum())}
        for name, t in state.items()
    }
    print(json.dumps({
        "format": metadata.get("format", ""),
        "clocktrain_format": metadata.get("clocktrain_format", ""),
        "tensors": tensors,
        "auto_config_error": error_of(lambda: AutoConfig.from_pretrained(folder)),
        "tokenizer_json": os.path.exists(os.path.join(folder, "tokenizer.json")),
        "tokenizers_error": error_of(lambda: Tokenizer.from_file(os.path.join(folder, "tokenizer_clocktrain.json"))),
    }))


if __name__ == "__main__":
    main()
