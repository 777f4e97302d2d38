#!/usr/bin/python3
"""An independent reference for clocktrain's CORE evaluator (docs/eval.md, "Rules").

It implements docs/eval.md's procedure with Python's own `random` module, jinja2 templates for the prompts
(rendered as nanochat renders them), its own tokenizer and its own scoring loop, and writes JSON in the
layout of `clocktrain eval core --dump-prompts` (every row's few-shot indices, prompts, token sequences,
spans, mean losses and verdicts, plus per-task accuracies and the aggregate), so the two can be compared
with tests/python/compare_core_dumps.py.

Tokenizer (one of):
  --toy-tokenizer        the word-level stand-in of tests/eval/eval_fakes.h (ToyEncoder)
  --tokenizer DIR        a clocktrain tokenizer folder (tokenizer.tiktoken + tokenizer_clocktrain.json), encoded
                         here with a plain-Python byte-pair merge (tiktoken's algorithm)
Model (one of):
  --fake-model hash --max-len N   the deterministic fake of tests/eval/eval_fakes.h (HashFakeScorer)
  --checkpoint DIR                a clocktrain checkpoint, run in torch by tests/python/reference_gpt.py

Usage:
  core_reference.py --bundle DIR [--tasks a,b] [--max-per-task N] (--toy-tokenizer | --tokenizer DIR)
                    (--fake-model hash --max-len N | --checkpoint DIR) [--out FILE]
"""
import argparse
import base64
import csv
import json
import math
import os
import random
import re
import sys
import time

import yaml
from jinja2 import Environment

# ----------------------------------------------------------------------------------------------
# Bundle

def load_bundle(root):
    with open(os.path.join(root, "core.yaml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    with open(os.path.join(root, "eval_meta_data.csv"), encoding="utf-8", newline="") as f:
        baselines = {row["Eval Task"]: float(row["Random baseline"]) for row in csv.DictReader(f)}
    tasks = []
    for t in config["icl_tasks"]:
        shots = t["num_fewshot"]
        shots = shots[0] if isinstance(shots, list) else shots
        path = os.path.join(root, "eval_data", t["dataset_uri"])
        tasks.append({
            "label": t["label"],
            "type": t["icl_task_type"],
            "shots": int(shots),
            "delimiter": t.get("continuation_delimiter", " "),
            "baseline": baselines[t["label"]],
            "path": path,
            "present": os.path.isfile(path),
        })
    return tasks


def load_rows(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            row = json.loads(line)
            row["_line"] = number
            rows.append(row)
    return rows

# ----------------------------------------------------------------------------------------------
# Prompts (jinja2, as nanochat renders them: each few-shot block followed by a blank line)

_env = Environment()
_TEMPLATES = {
    "multiple_choice": _env.from_string(
        "{% for ex in shots %}{{ ex.query }}{{ d }}{{ ex.choices[ex.gold] }}\n\n{% endfor %}"
        "{{ item.query }}{{ d }}{{ option }}"),
    "schema": _env.from_string(
        "{% for ex in shots %}{{ ex.context_options[ex.gold] }}{{ d }}{{ ex.continuation }}\n\n{% endfor %}"
        "{{ option }}{{ d }}{{ item.continuation }}"),
    "language_modeling": _env.from_string(
        "{% for ex in shots %}{{ ex.context | trim }}{{ d }}{{ ex.continuation }}\n\n{% endfor %}"
        "{{ item.context | trim }}{{ d }}{% if with_continuation %}{{ item.continuation }}{% endif %}"),
}


def render(task_type, d, item, shots):
    template = _TEMPLATES[task_type]
    if task_type == "multiple_choice":
        return [template.render(shots=shots, d=d, item=item, option=c) for c in item["choices"]]
    if task_type == "schema":
        return [template.render(shots=shots, d=d, item=item, option=c) for c in item["context_options"]]
    without = template.render(shots=shots, d=d, item=item, with_continuation=False).strip()
    with_ = template.render(shots=shots, d=d, item=item, with_continuation=True)
    return [without, with_]

# ----------------------------------------------------------------------------------------------
# Tokenizers

def fnv1a32(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


class ToyTokenizer:
    """tests/eval/eval_fakes.h ToyEncoder: ' ?[A-Za-z0-9]+' or one byte; id = 1 + fnv1a32 % (2^24-1)."""
    VOCAB = 1 << 24
    _piece = re.compile(rb" ?[A-Za-z0-9]+|.", re.DOTALL)

    def __init__(self):
        self._cache = {}

    def bos_id(self):
        return 0

    def encode(self, text):
        out = []
        for piece in self._piece.findall(text.encode("utf-8")):
            i = self._cache.get(piece)
            if i is None:
                i = self._cache[piece] = 1 + fnv1a32(piece) % (self.VOCAB - 1)
            out.append(i)
        return out


class BpeTokenizer:
    """A clocktrain tokenizer folder, encoded with tiktoken's rule: split with the pattern, then in each
    piece repeatedly merge the adjacent pair whose joined bytes have the lowest rank."""

    def __init__(self, folder):
        import regex
        self.ranks = {}
        with open(os.path.join(folder, "tokenizer.tiktoken"), encoding="ascii") as f:
            for line in f:
                if line.strip():
                    token, rank = line.split()
                    self.ranks[base64.b64decode(token)] = int(rank)
        json_path = os.path.join(folder, "tokenizer_clocktrain.json")  # tokenizer.json before the rename
        if not os.path.exists(json_path):
            json_path = os.path.join(folder, "tokenizer.json")
        with open(json_path, encoding="utf-8") as f:
            meta = json.load(f)
        self.pattern = regex.compile(meta["pattern"])
        specials = meta["special_tokens"]
        if isinstance(specials, list):  # [{"name": ..., "id": ...}] or a list of names after the merges
            specials = {s["name"]: s["id"] for s in specials} if specials and isinstance(specials[0], dict) else \
                {name: len(self.ranks) + i for i, name in enumerate(specials)}
        self._bos = specials["<|bos|>"]
        self._cache = {}

    def bos_id(self):
        return self._bos

    def _merge(self, piece):
        parts = [piece[i:i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            best, best_rank = None, None
            for i in range(len(parts) - 1):
                r = self.ranks.get(parts[i] + parts[i + 1])
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        return [self.ranks[p] for p in parts]

    def encode(self, text):
        out = []
        for piece in self.pattern.findall(text):
            b = piece.encode("utf-8")
            ids = self._cache.get(b)
            if ids is None:
                ids = [self.ranks[b]] if b in self.ranks else self._merge(b)
                self._cache[b] = ids
            out.extend(ids)
        return out

# ----------------------------------------------------------------------------------------------
# Models: score(sequences) -> [(losses, argmax)], losses[i] / argmax[i] for position i < len-1

class HashFakeModel:
    """tests/eval/eval_fakes.h HashFakeScorer."""

    def __init__(self, max_len):
        self.max_len = max_len

    def score(self, sequences):
        out = []
        for t in sequences:
            h = 2166136261
            losses, argmax = [], []
            for i in range(len(t) - 1):
                h = ((h ^ t[i]) * 16777619) & 0xFFFFFFFF
                target = t[i + 1]
                losses.append(((h ^ ((target * 2654435761) & 0xFFFFFFFF)) % 1009) / 64.0)
                argmax.append(target if h % 3 == 0 else (target + 1) % ToyTokenizer.VOCAB)
            out.append((losses, argmax))
        return out


class TorchCheckpointModel:
    """A clocktrain checkpoint run in torch (fp32) by tests/python/reference_gpt.py, the engine's
    independent torch twin of docs/model.md: load_checkpoint(dir) -> module, module(idx[B,T]) -> the
    softcapped logits [B,T,vocab], module.cfg.sequence_len the context."""

    def __init__(self, checkpoint):
        import torch
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import reference_gpt
        self.torch = torch
        self.model = reference_gpt.load_checkpoint(checkpoint)
        self.model.eval()
        self.max_len = int(self.model.cfg.sequence_len)

    def score(self, sequences):
        torch = self.torch
        out = []
        with torch.no_grad():
            for t in sequences:  # one at a time: no padding, so nothing depends on batching
                idx = torch.tensor([t], dtype=torch.long)
                logits = self.model(idx)[0].float()
                losses = torch.nn.functional.cross_entropy(logits[:-1], idx[0, 1:], reduction="none")
                out.append((losses.tolist(), logits[:-1].argmax(dim=-1).tolist()))
        return out


# ----------------------------------------------------------------------------------------------
# The procedure

def common_length(seqs, from_end):
    n = min(len(s) for s in seqs)
    for i in range(n):
        column = {s[len(s) - 1 - i] if from_end else s[i] for s in seqs}
        if len(column) > 1:
            return i
    return n


def question(task_type, prompts, tokenizer, max_len):
    """Returns (sequences [(tokens, begin, end)], prefix_mismatch, truncated, clamped)."""
    toks = [[tokenizer.bos_id()] + tokenizer.encode(p) for p in prompts]
    if task_type == "multiple_choice":
        start = common_length(toks, False)
        seqs = [(t, start, len(t)) for t in toks]
    elif task_type == "schema":
        suffix = common_length(toks, True)
        seqs = [(t, len(t) - suffix, len(t)) for t in toks]
    else:
        without, with_ = toks
        # a prefix, not necessarily a proper one: an empty span is judged correct (docs/eval.md)
        if not (len(without) <= len(with_) and with_[:len(without)] == without):
            return [], True, False, False
        seqs = [(with_, len(without), len(with_))]
    truncated = clamped = False
    fitted = []
    for t, b, e in seqs:
        if len(t) > max_len:
            crop = len(t) - max_len
            t, b, e = t[crop:], b - crop, e - crop
            truncated = True
        if b < 1:
            b, clamped = 1, True
        fitted.append((t, b, e))
    return fitted, False, truncated, clamped


def judge(task_type, seqs, scores, gold):
    if task_type == "language_modeling":
        (t, b, e), (losses, argmax) = seqs[0], scores[0]
        return [], -1, all(argmax[i - 1] == t[i] for i in range(b, e))
    means = []
    for (t, b, e), (losses, argmax) in zip(seqs, scores):
        span = [float(losses[i - 1]) for i in range(b, e)]
        total = 0.0
        for x in span:
            total += x
        means.append(total / len(span) if span else float("nan"))
    pred = means.index(min(means))  # first wins; Python's own NaN behaviour
    return means, pred, pred == gold


def evaluate_task(task, tokenizer, model, max_per_task):
    started = time.time()
    rows = load_rows(task["path"])
    random.Random(1337).shuffle(rows)
    if max_per_task > 0:
        rows = rows[:max_per_task]
    n, k = len(rows), task["shots"]
    records = []
    counts = {"correct": 0, "truncated": 0, "clamped": 0, "mismatch": 0}
    for idx, item in enumerate(rows):
        fewshot = random.Random(1234 + idx).sample([i for i in range(n) if i != idx], k) if k > 0 else []
        prompts = render(task["type"], task["delimiter"], item, [rows[i] for i in fewshot])
        seqs, mismatch, truncated, clamped = question(task["type"], prompts, tokenizer, model.max_len)
        means, pred, correct = [], -1, False
        if not mismatch:
            means, pred, correct = judge(task["type"], seqs, model.score([s[0] for s in seqs]), item.get("gold"))
        counts["correct"] += bool(correct)
        counts["truncated"] += truncated
        counts["clamped"] += clamped
        counts["mismatch"] += mismatch
        records.append({
            "idx": idx, "line": item["_line"], "fewshot": fewshot, "prompts": prompts,
            "prefix_mismatch": mismatch, "truncated": truncated, "clamped": clamped,
            "sequences": [{"tokens": t, "span": [b, e]} for t, b, e in seqs],
            "mean_losses": [None if math.isnan(m) else m for m in means],
            "pred": pred, "correct": bool(correct),
        })
    accuracy = counts["correct"] / n
    rb = 0.01 * task["baseline"]
    return {
        "label": task["label"], "shots": k, "type": task["type"], "rows": n, "correct": counts["correct"],
        "accuracy": accuracy, "centered": (accuracy - rb) / (1.0 - rb),
        "random_baseline_percent": task["baseline"], "seconds": time.time() - started,
        "truncated_rows": counts["truncated"], "clamped_rows": counts["clamped"],
        "prefix_mismatch_rows": counts["mismatch"], "row_records": records,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--tasks", default="")
    ap.add_argument("--max-per-task", type=int, default=0)
    ap.add_argument("--toy-tokenizer", action="store_true")
    ap.add_argument("--tokenizer")
    ap.add_argument("--fake-model", choices=["hash"])
    ap.add_argument("--max-len", type=int, default=0)
    ap.add_argument("--checkpoint")
    ap.add_argument("--out")
    args = ap.parse_args()

    if args.toy_tokenizer:
        tokenizer = ToyTokenizer()
    elif args.tokenizer:
        tokenizer = BpeTokenizer(args.tokenizer)
    elif args.checkpoint:
        tokenizer = BpeTokenizer(args.checkpoint)  # the tokenizer files are saved beside the weights
    else:
        ap.error("give --toy-tokenizer or --tokenizer DIR (or --checkpoint DIR holding the tokenizer)")
    if args.fake_model == "hash":
        if args.max_len < 2:
            ap.error("--fake-model hash needs --max-len >= 2")
        model = HashFakeModel(args.max_len)
    elif args.checkpoint:
        model = TorchCheckpointModel(args.checkpoint)
    else:
        ap.error("give --fake-model hash or --checkpoint DIR")

    tasks = load_bundle(args.bundle)
    absent = [t["label"] for t in tasks if not t["present"]]
    wanted = [s for s in args.tasks.split(",") if s]
    missing = [] if wanted else absent  # a chosen subset has every task it names
    chosen = [t for t in tasks if t["present"]] if not wanted else [next(t for t in tasks if t["label"] == w) for w in wanted]
    results = [evaluate_task(t, tokenizer, model, args.max_per_task) for t in chosen]
    core = sum(r["centered"] for r in results) / len(results)
    doc = {
        "metric": "CORE" if len(results) == len(tasks) else f"CORE-{len(results)}",
        "core": core, "tasks_evaluated": len(results), "missing_tasks": missing,
        "max_per_task": args.max_per_task, "task_subset": bool(wanted) and len(chosen) < len(tasks) - len(absent),
        "tasks": results,
    }
    text = json.dumps(doc, ensure_ascii=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        print(text)
    for r in results:
        print(f"{r['label']:34s} {r['shots']:5d} {r['type']:17s} {r['rows']:6d} {r['accuracy']:9.4f} {r['centered']:9.4f}",
              file=sys.stderr)
    print(f"{doc['metric']}: {core:.4f}", file=sys.stderr)


if __name__ == "__main__":
    main()
