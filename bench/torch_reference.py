"""The PyTorch side of bench/train_throughput.sh (Debian's torch) and bench/torch2_throughput.sh
(PyTorch 2 from PyPI): the same model (tests/python/reference_gpt.py, from docs/model.md), batch, optimizer
(tests/python/reference_optim.py: clipping, Muon, AdamW) and thread count as
bench/train_throughput_bench.cpp, on random tokens, timed step by step.

usage: torch_reference.py RECIPE [--threads N] [--steps N] [--warmup N] [--tokens-per-step N]
                                 [--micro-batch-rows N] [--clock wall|cpu]
                                 [--mode eager|compile] [--precision f32|bf16]
--clock cpu times with the process's CPU clock (as the C++ bench does; meaningful with --threads 1).
--mode compile wraps the model (forward, loss and so backward) in torch.compile (PyTorch 2); the
optimizer step stays eager (its host-side gradient norm would break the graph), as a user would
write it. Compilation happens in the warm-up steps, outside the measured ones: give at least one.
--precision bf16 runs the forward under torch.autocast(bfloat16) (bench/torch_recipe.py says what
that rounds); f32 is the default.
Prints a summary and one JSON line (prefix "json: ") with the median step time and tokens/s.
A recipe file states only what differs from recipes/baseline.toml, whose values are the defaults.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
from torch_recipe import autocast, build_model, build_optimizer, load_recipe, model_config, prepare_for_precision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("recipe")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--tokens-per-step", type=int, default=0)
    ap.add_argument("--micro-batch-rows", type=int, default=0)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--precision", choices=["f32", "bf16"], default="f32")
    args = ap.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    recipe = load_recipe(args.recipe)
    cfg = model_config(recipe)
    threads = args.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    tokens_per_step = args.tokens_per_step or recipe["batch"]["tokens_per_step"]
    B = args.micro_batch_rows or recipe["batch"]["micro_batch_rows"]
    T = cfg.sequence_len
    micro = tokens_per_step // T // B

    model = build_model(recipe, seed=0)
    opt = build_optimizer(model, recipe)
    prepare_for_precision(model, args.precision)
    forward = torch.compile(model) if args.mode == "compile" else model
    steps, fwd_s, bwd_s, opt_s = [], [], [], []
    startup = time.perf_counter()
    for s in range(args.warmup + args.steps):
        t0 = clock()
        model.zero_grad(set_to_none=False)
        fwd = bwd = 0.0
        for _ in range(micro):
            x = torch.randint(0, cfg.vocab_size, (B, T), dtype=torch.int64)
            y = torch.randint(0, cfg.vocab_size, (B, T), dtype=torch.int64)
            t = clock()
            with autocast(args.precision):
                loss = forward(x, y) / micro
            fwd += clock() - t
            t = clock()
            loss.backward()
            bwd += clock() - t
        t = clock()
        opt.step(1.0)
        o_s = clock() - t
        total = clock() - t0
        kind = "warm-up" if s < args.warmup else "measured"
        print(f"{kind} step {s + 1}: {total:.3f} s (forward {fwd:.3f}, backward {bwd:.3f}, optimizer {o_s:.3f})",
              file=sys.stderr)
        if s + 1 == args.warmup:
            startup = time.perf_counter() - startup
        if s >= args.warmup:
            steps.append(total)
            fwd_s.append(fwd)
            bwd_s.append(bwd)
            opt_s.append(o_s)
    step = statistics.median(steps)
    result = {
        "impl": "torch",
        "mode": args.mode,
        "precision": args.precision,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "recipe": recipe.get("name", "?"),
        "threads": threads,
        "clock": args.clock,
        "tokens_per_step": tokens_per_step,
        "recipe_tokens_per_step": recipe["batch"]["tokens_per_step"],
        "micro_batch_rows": B,
        "steps": args.steps,
        "warmup_wall_seconds": startup if args.warmup else 0.0,
        "step_seconds": step,
        "forward_seconds": statistics.median(fwd_s),
        "backward_seconds": statistics.median(bwd_s),
        "optimizer_seconds": statistics.median(opt_s),
        "tokens_per_second": tokens_per_step / step,
    }
    print(f"{result['recipe']} (torch {torch.__version__} {args.mode} {args.precision}, {threads} threads): "
          f"step {step:.3f} s, {result['tokens_per_second']:.0f} tokens/s")
    print("json: " + json.dumps(result))


if __name__ == "__main__":
    main()
