"""The PyTorch side of bench/quality_per_clock.sh: a recipe trained against the same training clock as
`clocktrain train --budget S` (docs/train.md), on the same prepared data, then saved as a checkpoint
folder that `clocktrain eval bpb` scores.

usage: torch2_train.py RECIPE --data DIR --out DIR --budget S [--threads N] [--seed N]
                       [--mode compile|eager] [--precision auto|f32|bf16]

The same as clocktrain's trainer:
- the model, its shapes and docs/model.md's initialisation rule (bench/torch_recipe.py; clocktrain draws from
  its own generator, so the initial weights differ draw by draw);
- the rows: bench/token_rows.py replays TokenLoader's order for the recipe's seed, micro-batch by
  micro-batch;
- the optimizer (clipping, Muon, AdamW with every field of the recipe) and the schedule: lr factor from
  progress = clock / budget (warmdown to the budget's end), Muon's momentum warm-up by optimizer step;
- the clock: the first run.startup_steps steps (and everything before them: imports, data set-up,
  torch.compile's compilation, which happens in the first forward and backward) are startup, outside
  the clock; the clock is the sum of the step times (data, forward, backward, optimizer); a step starts
  only if run.step_time_margin x the slowest of the last 10 steps still ends within the budget.
What differs: no held-out evaluations, periodic checkpoints or NaN checks during the run (clocktrain's
are outside its clock or cost a sum per tensor); under bf16, torch.autocast's rounding
(bench/torch_recipe.py); the optimizer step runs eager in both modes.

Writes OUT/checkpoint/ (model.safetensors with the model's names, config.json, the tokenizer files
copied from DATA/tokenizer) and OUT/train_summary.json (steps, tokens, clock, startup, final loss).
"""

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import time

import torch
from token_rows import TokenRows
from torch_recipe import (autocast, build_model, build_optimizer, load_recipe, model_config,
                          prepare_for_precision, resolve_precision)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from reference_gpt import NORM_EPS, write_safetensors  # noqa: E402
from reference_optim import lr_factor, warmdown_position  # noqa: E402

STEP_TIME_WINDOW = 10  # trainer.cpp kStepTimeWindow


def config_json(cfg):
    """The fields of model/config.cpp to_json."""
    return {
        "format": "clocktrain-model-config/1",
        "model_type": "clocktrain-gpt",
        "architectures": ["ClocktrainGPT"],
        "vocab_size": cfg.vocab_size,
        "padded_vocab_size": cfg.padded_vocab_size,
        "vocab_pad_multiple": cfg.vocab_pad_multiple,
        "sequence_len": cfg.sequence_len,
        "n_layer": cfg.n_layer,
        "n_embd": cfg.n_embd,
        "n_head": cfg.n_head,
        "n_kv_head": cfg.n_kv_head,
        "mlp_ratio": cfg.mlp_ratio,
        "attention_layers": list(cfg.attention_layers),
        "softcap": cfg.softcap,
        "rope_base": cfg.rope_base,
        "qk_gain": cfg.qk_gain,
        "norm_eps": NORM_EPS,
    }


def save_checkpoint(model, data_dir, out):
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"),
                      {name: t.detach().float() for name, t in model.state_dict().items()},
                      {"format": "pt", "clocktrain_format": "clocktrain-model/1",
                       "writer": f"bench/torch2_train.py, torch {torch.__version__}"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config_json(model.cfg), f, indent=2)
    tokenizer = os.path.join(data_dir, "tokenizer")
    shutil.copyfile(os.path.join(tokenizer, "tokenizer.tiktoken"), os.path.join(out, "tokenizer.tiktoken"))
    json_name = "tokenizer_clocktrain.json"  # tokenizer.json in data folders prepared before the rename
    source = os.path.join(tokenizer, json_name)
    shutil.copyfile(source if os.path.exists(source) else os.path.join(tokenizer, "tokenizer.json"),
                    os.path.join(out, json_name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("recipe")
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, required=True)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--mode", choices=["compile", "eager"], default="compile")
    ap.add_argument("--precision", choices=["auto", "f32", "bf16"], default=None,
                    help="default: the recipe's backend.matmul_precision")
    args = ap.parse_args()
    startup_watch = time.perf_counter()
    recipe = load_recipe(args.recipe)
    run = recipe["run"]
    seed = run["seed"] if args.seed is None else args.seed
    precision = resolve_precision(args.precision or recipe["backend"]["matmul_precision"])
    threads = args.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    cfg = model_config(recipe)
    T, B = cfg.sequence_len, recipe["batch"]["micro_batch_rows"]
    tokens_per_step = recipe["batch"]["tokens_per_step"]
    micro = tokens_per_step // (T * B)
    schedule = recipe["schedule"]

    rows = TokenRows(args.data, "train", B, T, seed)
    model = build_model(recipe, seed)
    opt = build_optimizer(model, recipe)
    prepare_for_precision(model, precision)
    forward = torch.compile(model) if args.mode == "compile" else model

    step = tokens = 0
    clock = startup = 0.0
    clock_running = run["startup_steps"] == 0
    if clock_running:
        startup = time.perf_counter() - startup_watch
    recent = []
    loss = float("nan")
    while True:
        if clock_running and clock + run["step_time_margin"] * max(recent, default=0.0) > args.budget:
            break
        lr = lr_factor(clock / args.budget, schedule["warmup_fraction"], schedule["warmdown_fraction"],
                       schedule["final_lr_fraction"])
        warmdown = warmdown_position(clock / args.budget, schedule["warmdown_fraction"])
        t0 = time.perf_counter()
        model.zero_grad(set_to_none=False)
        loss_sum = 0.0
        for _ in range(micro):
            x, y = (torch.from_numpy(a) for a in rows.next_batch())
            with autocast(precision):
                micro_loss = forward(x, y)
            (micro_loss / micro).backward()
            loss_sum += float(micro_loss.detach())
        opt.step(lr, warmdown, clock / args.budget)
        seconds = time.perf_counter() - t0
        step += 1
        tokens += tokens_per_step
        loss = loss_sum / micro
        if clock_running:
            clock += seconds
            recent = (recent + [seconds])[-STEP_TIME_WINDOW:]
        elif step >= run["startup_steps"]:
            clock_running = True
            startup = time.perf_counter() - startup_watch
            recent = [seconds]  # the last startup step: a first, pessimistic estimate (trainer.cpp)
        if step % 10 == 0 or step <= run["startup_steps"]:
            print(f"step {step}: loss {loss:.4f}, {seconds:.2f} s, clock {clock:.1f}/{args.budget:.0f} s, "
                  f"lr factor {lr:.3f}", file=sys.stderr, flush=True)
        if not math.isfinite(loss):
            print(f"step {step}: loss {loss}; stopping", file=sys.stderr)
            break

    save_checkpoint(model, args.data, os.path.join(args.out, "checkpoint"))
    summary = {
        "tool": f"torch {torch.__version__} {args.mode} {precision}",
        "recipe": recipe.get("name", "?"),
        "steps": step,
        "tokens": tokens,
        "train_clock_seconds": clock,
        "startup_seconds": startup,
        "budget_seconds": args.budget,
        "final_loss": loss,
        "median_step_seconds": statistics.median(recent) if recent else None,
        "threads": threads,
        "seed": seed,
    }
    with open(os.path.join(args.out, "train_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
