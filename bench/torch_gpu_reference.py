#!/usr/bin/env python3
"""The baseline GPT of docs/model.md, trained in PyTorch with torch.compile: the side-by-side
reference for clocktrain's CUDA backend (bench/gpu_check.sh runs both in one device call).

Same shape, optimizer and step as docs/model.md: 10 layers, width 640, 5 heads of 128, T = 1024,
vocab 8192, relu^2 MLP, rotary (half split) + QK norm, softcap 15, untied head; Muon (Nesterov
momentum, 5 Newton-Schulz iterations in bf16) for the layers' matrices, AdamW for wte and lm_head
(lr scaled by (640/768)^-0.5), global gradient clipping at 1.0; bf16 autocast, fp32 master weights.
Like clocktrain's trainer it reads the loss and the gradient norm on the host every step.
Tokens are random (speed does not depend on them), so no data has to travel to the device.

Prints one JSON line: tokens/s, step time, peak memory, the compile time, the loss curve.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

NORM_EPS = torch.finfo(torch.float32).eps


def rms_norm(x):
    if hasattr(F, "rms_norm"):  # PyTorch >= 2.4 (the device has 2.11)
        return F.rms_norm(x, (x.size(-1),), eps=NORM_EPS)
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + NORM_EPS).to(x.dtype)


def causal_attention(q, k, v):  # [B, H, T, D]
    if hasattr(F, "scaled_dot_product_attention"):  # flash attention on the GPU
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.size(-1))  # old PyTorch: the CPU smoke test only
    mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
    return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v


def rotary(x, cos, sin):  # x [B, T, H, D]; half split as docs/model.md
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos + x2 * sin, -x1 * sin + x2 * cos], dim=-1)


class Block(nn.Module):
    def __init__(self, c, heads):
        super().__init__()
        self.heads, self.head_dim = heads, c // heads
        self.c_q = nn.Linear(c, c, bias=False)
        self.c_k = nn.Linear(c, c, bias=False)
        self.c_v = nn.Linear(c, c, bias=False)
        self.attn_proj = nn.Linear(c, c, bias=False)
        self.c_fc = nn.Linear(c, 4 * c, bias=False)
        self.mlp_proj = nn.Linear(4 * c, c, bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        h = rms_norm(x)
        q = self.c_q(h).view(B, T, self.heads, self.head_dim)
        k = self.c_k(h).view(B, T, self.heads, self.head_dim)
        v = self.c_v(h).view(B, T, self.heads, self.head_dim)
        q, k = rms_norm(rotary(q, cos, sin)), rms_norm(rotary(k, cos, sin))
        y = causal_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.attn_proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.relu(self.c_fc(rms_norm(x))).square())


class GPT(nn.Module):
    def __init__(self, vocab, c, layers, heads, seq_len):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.blocks = nn.ModuleList([Block(c, heads) for _ in range(layers)])
        self.lm_head = nn.Linear(c, vocab, bias=False)
        d = c // heads
        inv_freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), inv_freq)
        self.register_buffer("cos", angles.cos().float()[None, :, None, :], persistent=False)
        self.register_buffer("sin", angles.sin().float()[None, :, None, :], persistent=False)
        # docs/model.md initialisation
        nn.init.normal_(self.wte.weight, 0.0, 1.0)
        nn.init.zeros_(self.lm_head.weight)
        for b in self.blocks:
            for lin in (b.c_q, b.c_k, b.c_v, b.c_fc):
                fan_out, fan_in = lin.weight.shape
                nn.init.normal_(lin.weight, 0.0, fan_in ** -0.5 * min(1.0, (fan_out / fan_in) ** 0.5))
            nn.init.zeros_(b.attn_proj.weight)
            nn.init.zeros_(b.mlp_proj.weight)

    def forward(self, idx, targets):
        T = idx.shape[1]
        cos, sin = self.cos[:, :T].to(torch.bfloat16), self.sin[:, :T].to(torch.bfloat16)
        x = rms_norm(self.wte(idx))
        for b in self.blocks:
            x = b(x, cos, sin)
        logits = self.lm_head(rms_norm(x)).float()
        logits = 15.0 * torch.tanh(logits / 15.0)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)  # targets: a strided slice


def newton_schulz(g, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.bfloat16()
    transposed = g.size(0) > g.size(1)
    if transposed:
        x = x.T
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        A = x @ x.T
        B = b * A + c * A @ A
        x = a * x + B @ x
    return x.T if transposed else x


class Muon(torch.optim.Optimizer):
    def __init__(self, params, lr=0.02, momentum=0.95, compile_ns=True):
        super().__init__(params, dict(lr=lr, momentum=momentum))
        self.ns = torch.compile(newton_schulz) if compile_ns else newton_schulz

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            mu = group["momentum"]
            for p in group["params"]:
                state = self.state[p]
                if "buf" not in state:
                    state["buf"] = torch.zeros_like(p)
                buf = state["buf"]
                buf.lerp_(p.grad, 1 - mu)                 # buf = mu buf + (1-mu) g
                u = p.grad.lerp(buf, mu)                   # u = (1-mu) g + mu buf
                x = self.ns(u)
                p.add_(x.to(p.dtype), alpha=-group["lr"] * max(1.0, p.size(0) / p.size(1)) ** 0.5)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30, help="timed steps (after the warm-up steps)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps (compilation happens here)")
    parser.add_argument("--rows", type=int, default=64, help="sequences per step (64 x 1024 = 65,536 tokens)")
    parser.add_argument("--micro-rows", type=int, default=64, help="sequences per micro-batch")
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--heads", type=int, default=5)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--json", help="also write the result here")
    parser.add_argument("--device", default="cuda", help="cuda; cpu only for a smoke test of this script")
    args = parser.parse_args()
    on_gpu = args.device == "cuda"
    assert not on_gpu or torch.cuda.is_available(), "no CUDA device"
    torch.manual_seed(42)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device(args.device)
    model = GPT(args.vocab, args.width, args.layers, args.heads, args.seq).to(dev)
    matrices = [p for n, p in model.named_parameters() if p.ndim == 2 and n.startswith("blocks.")]
    width_scale = (args.width / 768.0) ** -0.5
    adam = torch.optim.AdamW([dict(params=[model.wte.weight], lr=0.2 * width_scale),
                              dict(params=[model.lm_head.weight], lr=0.004 * width_scale)],
                             betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0, **(dict(fused=True) if on_gpu else {}))
    muon = Muon(matrices, lr=0.02, momentum=0.95, compile_ns=not args.no_compile)
    compiled = model if args.no_compile else torch.compile(model)
    micro_steps = args.rows // args.micro_rows
    gen = torch.Generator(device=dev).manual_seed(0)

    def step():
        for _ in range(micro_steps):
            tokens = torch.randint(0, args.vocab, (args.micro_rows, args.seq + 1), device=dev, generator=gen)
            with torch.autocast(args.device, dtype=torch.bfloat16):
                loss = compiled(tokens[:, :-1], tokens[:, 1:]) / micro_steps
            loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        muon.step()
        adam.step()
        model.zero_grad(set_to_none=True)
        return loss.item() * micro_steps, norm.item()  # the host reads both, as clocktrain's trainer does

    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    start = time.time()
    losses = []
    for _ in range(args.warmup):
        losses.append(step()[0])
    sync()
    warmup_seconds = time.time() - start
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    wall = time.time()
    for _ in range(args.steps):
        losses.append(step()[0])
    sync()
    seconds = time.time() - wall  # the host reads the loss every step: wall time is device time
    tokens = args.steps * args.rows * args.seq
    params = sum(p.numel() for p in model.parameters())
    flops_per_token = 6 * (params - model.wte.weight.numel()) + 12 * args.layers * args.width * args.seq
    result = dict(
        implementation="pytorch " + torch.__version__ + (" eager" if args.no_compile else " torch.compile"),
        device=torch.cuda.get_device_name() if on_gpu else "cpu", tokens_per_second=tokens / seconds,
        step_ms=1000.0 * seconds / args.steps, warmup_seconds=warmup_seconds,
        peak_memory_gib=torch.cuda.max_memory_allocated() / 2**30 if on_gpu else 0.0, parameters=params,
        flops_per_token=flops_per_token, mfu_989=flops_per_token * tokens / seconds / 989.4e12,
        steps=args.steps, tokens_per_step=args.rows * args.seq, losses=[round(l, 4) for l in losses])
    line = json.dumps(result)
    print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
