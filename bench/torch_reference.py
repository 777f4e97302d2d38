"""The PyTorch side of bench/train_throughput.sh: the same model (tests/python/reference_gpt.py, from
model.md), batch, optimizer (tests/python/reference_optim.py: clipping, Muon, AdamW) and thread count
as bench/train_throughput_bench.cpp, on random tokens, timed step by step in float32.

usage: torch_reference.py RECIPE [--threads N] [--steps N] [--warmup N] [--tokens-per-step N]
                                 [--micro-batch-rows N] [--clock wall|cpu]
--clock cpu times with the process's CPU clock (as the C++ bench does; meaningful with --threads 1).
Prints a summary and one JSON line (prefix "json: ") with the median step time and tokens/s.
A recipe file states only what differs from recipes/baseline.toml, whose values are the defaults.
"""

import argparse
import json
import os
import statistics
import sys
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import torch  # noqa: E402
from reference_gpt import Config, GPT  # noqa: E402
from reference_optim import OptimizerConfig, ReferenceOptimizer  # noqa: E402


def load_recipe(path):
    with open(os.path.join(HERE, "..", "recipes", "baseline.toml"), "rb") as f:
        recipe = tomllib.load(f)
    with open(path, "rb") as f:
        for table, fields in tomllib.load(f).items():
            if isinstance(fields, dict):
                recipe.setdefault(table, {}).update(fields)
            else:
                recipe[table] = fields
    return recipe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("recipe")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--tokens-per-step", type=int, default=0)
    ap.add_argument("--micro-batch-rows", type=int, default=0)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = ap.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    recipe = load_recipe(args.recipe)
    m = recipe["model"]
    if m.get("attention_layers") == "all":
        m["attention_layers"] = None
    cfg = Config(**m)
    threads = args.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    tokens_per_step = args.tokens_per_step or recipe["batch"]["tokens_per_step"]
    B = args.micro_batch_rows or recipe["batch"]["micro_batch_rows"]
    T = cfg.sequence_len
    micro = tokens_per_step // T // B

    model = GPT(cfg)
    with torch.no_grad():  # model.md's initialisation
        for name, p in model.named_parameters():
            if name == "transformer.wte.weight":
                p.normal_(0.0, 1.0)
            elif name == "lm_head.weight" or name.endswith("c_proj.weight"):
                p.zero_()
            else:
                fan_out, fan_in = p.shape
                p.normal_(0.0, fan_in**-0.5 * min(1.0, (fan_out / fan_in) ** 0.5))
    o = recipe["optimizer"]
    opt = ReferenceOptimizer(
        model,
        OptimizerConfig(
            matrix_lr=o["matrix_lr"],
            embedding_lr=o["embedding_lr"],
            unembedding_lr=o["unembedding_lr"],
            grad_clip=o["grad_clip"],
        ),
    )
    steps, fwd_s, bwd_s, opt_s = [], [], [], []
    for s in range(args.warmup + args.steps):
        t0 = clock()
        model.zero_grad(set_to_none=False)
        fwd = bwd = 0.0
        for _ in range(micro):
            x = torch.randint(0, cfg.vocab_size, (B, T), dtype=torch.int64)
            y = torch.randint(0, cfg.vocab_size, (B, T), dtype=torch.int64)
            t = clock()
            loss = model(x, y) / micro
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
        if s >= args.warmup:
            steps.append(total)
            fwd_s.append(fwd)
            bwd_s.append(bwd)
            opt_s.append(o_s)
    step = statistics.median(steps)
    result = {
        "impl": "torch",
        "torch_version": torch.__version__,
        "recipe": recipe.get("name", "?"),
        "threads": threads,
        "clock": args.clock,
        "tokens_per_step": tokens_per_step,
        "recipe_tokens_per_step": recipe["batch"]["tokens_per_step"],
        "micro_batch_rows": B,
        "steps": args.steps,
        "step_seconds": step,
        "forward_seconds": statistics.median(fwd_s),
        "backward_seconds": statistics.median(bwd_s),
        "optimizer_seconds": statistics.median(opt_s),
        "tokens_per_second": tokens_per_step / step,
    }
    print(f"{result['recipe']} (torch {torch.__version__}, {threads} threads): step {step:.3f} s, "
          f"{result['tokens_per_second']:.0f} tokens/s")
    print("json: " + json.dumps(result))


if __name__ == "__main__":
    main()
