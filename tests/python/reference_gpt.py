"""The GPT of docs/model.md in PyTorch, as an independent reference for clocktrain's C++ model.

Written from the spec (not from clocktrain's code): parameter names and shapes follow nanochat's
state_dict ([out, in]), so a clocktrain checkpoint folder (config.json + model.safetensors) loads
into it unchanged:

    model = load_checkpoint("runs/x/checkpoint")            # float32 by default
    loss = model(inputs, targets)                           # mean over targets >= 0
    losses = model(inputs, targets, reduction="none")       # per position, 0 where target < 0
    logits = model(inputs)                                  # softcapped, [B, T, vocab_size]

read_safetensors / write_safetensors are a minimal reader and writer of the format (8-byte
little-endian header length, JSON header, raw little-endian data) so that no extra package is needed.
Works with the system python3 (Debian's python3-torch, 1.13) and newer torch.
"""

import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

NORM_EPS = float(np.finfo(np.float32).eps)  # rmsnorm eps: the float32 machine epsilon

_ST_DTYPES = {
    "F32": (np.float32, torch.float32),
    "F64": (np.float64, torch.float64),
    "I32": (np.int32, torch.int32),
    "I64": (np.int64, torch.int64),
}


def read_safetensors(path):
    """Returns ({name: tensor}, metadata dict)."""
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        np_dtype, _ = _ST_DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[base + begin : base + end], dtype=np.dtype(np_dtype).newbyteorder("<"))
        tensors[name] = torch.from_numpy(array.reshape(info["shape"]).copy())
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (float32, float64, int32, int64) in the given order."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        array = t.detach().cpu().contiguous().numpy()
        st = {np.dtype(v[0]): k for k, v in _ST_DTYPES.items()}[array.dtype]
        blob = array.astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": st, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(path + ".tmp", path)


class Config:
    def __init__(self, **fields):
        self.vocab_size = fields["vocab_size"]
        self.vocab_pad_multiple = fields.get("vocab_pad_multiple", 64)
        self.sequence_len = fields["sequence_len"]
        self.n_layer = fields["n_layer"]
        self.n_embd = fields["n_embd"]
        self.n_head = fields["n_head"]
        self.n_kv_head = fields.get("n_kv_head", self.n_head)
        self.mlp_ratio = fields.get("mlp_ratio", 4)
        self.attention_layers = fields.get("attention_layers") or [True] * self.n_layer
        self.softcap = fields.get("softcap", 15.0)
        self.rope_base = fields.get("rope_base", 10000.0)
        self.qk_gain = fields.get("qk_gain", 1.0)  # frontier.md 1.6: q, k times the gain after QK norm
        # frontier.md 1.1: x = r[i] x + a[i] x0 before block i (nanochat's resid_lambdas, x0_lambdas)
        self.residual_scalars = fields.get("residual_scalars", False)

    @property
    def head_dim(self):
        return self.n_embd // self.n_head

    @property
    def padded_vocab_size(self):
        m = self.vocab_pad_multiple
        return (self.vocab_size + m - 1) // m * m


def rms_norm(x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + NORM_EPS)


def rotary_tables(positions, head_dim, base, dtype):
    """cos, sin [positions, head_dim/2] with angle t * base^(-2j/head_dim), computed in float64."""
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    inv_freq = base ** (-2.0 * j / head_dim)
    angles = torch.outer(torch.arange(positions, dtype=torch.float64), inv_freq)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rotary(x, cos, sin):
    """x [B, T, H, D]; half split: (x1 cos + x2 sin, -x1 sin + x2 cos)."""
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * cos + x2 * sin, -x1 * sin + x2 * cos], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        hd = cfg.head_dim
        self.c_q = nn.Linear(cfg.n_embd, cfg.n_head * hd, bias=False)
        self.c_k = nn.Linear(cfg.n_embd, cfg.n_kv_head * hd, bias=False)
        self.c_v = nn.Linear(cfg.n_embd, cfg.n_kv_head * hd, bias=False)
        self.c_proj = nn.Linear(cfg.n_head * hd, cfg.n_embd, bias=False)

    def forward(self, x, cos, sin):
        cfg = self.cfg
        B, T, _ = x.shape
        hd = cfg.head_dim
        q = self.c_q(x).view(B, T, cfg.n_head, hd)
        k = self.c_k(x).view(B, T, cfg.n_kv_head, hd)
        v = self.c_v(x).view(B, T, cfg.n_kv_head, hd)
        q, k = rms_norm(apply_rotary(q, cos, sin)), rms_norm(apply_rotary(k, cos, sin))
        if cfg.qk_gain != 1.0:
            q, k = cfg.qk_gain * q, cfg.qk_gain * k
        rep = cfg.n_head // cfg.n_kv_head
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, H, T, D]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(B, T, cfg.n_head * hd))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, cfg.mlp_ratio * cfg.n_embd, bias=False)
        self.c_proj = nn.Linear(cfg.mlp_ratio * cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x):
        return self.c_proj(F.relu(self.c_fc(x)).square())


class Block(nn.Module):
    def __init__(self, cfg, has_attention):
        super().__init__()
        if has_attention:
            self.attn = Attention(cfg)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin):
        if hasattr(self, "attn"):
            x = x + self.attn(rms_norm(x), cos, sin)
        return x + self.mlp(rms_norm(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        if cfg.residual_scalars:  # registered first: nanochat's state_dict order
            self.resid_lambdas = nn.Parameter(torch.ones(cfg.n_layer))
            self.x0_lambdas = nn.Parameter(torch.zeros(cfg.n_layer))
        self.transformer = nn.ModuleDict(
            {
                "wte": nn.Embedding(cfg.padded_vocab_size, cfg.n_embd),
                "h": nn.ModuleList([Block(cfg, cfg.attention_layers[i]) for i in range(cfg.n_layer)]),
            }
        )
        self.lm_head = nn.Linear(cfg.n_embd, cfg.padded_vocab_size, bias=False)

    def forward(self, idx, targets=None, reduction="mean"):
        cfg = self.cfg
        T = idx.shape[1]
        dtype = self.transformer["wte"].weight.dtype
        cos, sin = rotary_tables(T, cfg.head_dim, cfg.rope_base, dtype)
        x = rms_norm(self.transformer["wte"](idx.long()))
        x0 = x
        for i, block in enumerate(self.transformer["h"]):
            if cfg.residual_scalars:
                x = self.resid_lambdas[i] * x + self.x0_lambdas[i] * x0
            x = block(x, cos, sin)
        x = rms_norm(x)
        logits = self.lm_head(x)[..., : cfg.vocab_size]  # padded rows are never scored
        logits = cfg.softcap * torch.tanh(logits / cfg.softcap)
        if targets is None:
            return logits
        t = targets.long().clone()
        t[t < 0] = -1
        flat = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), t.reshape(-1), ignore_index=-1, reduction="none")
        if reduction == "none":
            return flat.view(t.shape)
        valid = (t >= 0).sum()
        return flat.sum() / valid.clamp(min=1)

    def matrix_params(self):
        return [p for p in self.transformer["h"].parameters()]


def load_checkpoint(folder, dtype=torch.float32):
    """A clocktrain checkpoint folder (config.json + model.safetensors) as a GPT module."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = Config(**json.load(f))
    model = GPT(cfg)
    tensors, _ = read_safetensors(os.path.join(folder, "model.safetensors"))
    model.load_state_dict(tensors, strict=True)
    return model.to(dtype)
