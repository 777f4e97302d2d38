"""Checks that the PyTorch side of bench/quality_per_clock.sh sees what clocktrain sees:

  torch2_parity_check.py rows DATA SEQ_LEN BATCH_ROWS SEED BATCHES [--bench build/release/bench/loader_rows_bench]
      bench/token_rows.py (the Python port of the trainer's loader) against clocktrain's TokenLoader:
      the first input token of every row and each batch's token sum, batch by batch, must be equal.
  torch2_parity_check.py checkpoint CKPT [--clocktrain build/release/clocktrain] [--data ../shared/data]
                                         [--chars 6000] [--tolerance 1e-4]
      a checkpoint folder (e.g. the one bench/torch2_train.py saved) in `clocktrain eval bpb` against
      the same weights in torch (tests/python/reference_gpt.py, float32), on a small validation set
      made for the check: the first --chars characters of the first two documents of DATA/val, each
      encoded by `clocktrain tokenizer encode --bos` and concatenated as the evaluator does
      (docs/eval.md). The summed loss over the targets that are not special tokens (nats) must agree
      within --tolerance, relative (float32 kernels summed in different orders differ by about 1e-6
      here; a wrong name, layout or config field differs by orders of magnitude), and so must the
      number of those targets, exactly.
Prints one line per check and exits 1 on a failure. Runs under the bench venv's python
(bench/torch2_venv.sh) or Debian's /usr/bin/python3.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))


def check_rows(args):
    from token_rows import TokenRows

    out = subprocess.run([args.bench, args.data, str(args.seq_len), str(args.batch_rows), str(args.seed),
                          str(args.batches)], check=True, capture_output=True, text=True).stdout.splitlines()
    rows = TokenRows(args.data, "train", args.batch_rows, args.seq_len, args.seed)
    for b, line in enumerate(out):
        inputs, _ = rows.next_batch()
        mine = f"batch {b}: " + " ".join(str(int(t)) for t in inputs[:, 0]) + f" {int(inputs.sum())}"
        if mine != line:
            print(f"FAIL  rows: batch {b}\n  clocktrain: {line}\n  python:     {mine}")
            return 1
    print(f"ok    rows: {len(out)} batches of {args.batch_rows} x {args.seq_len} (seed {args.seed}) "
          f"in the same order as clocktrain's loader")
    return 0


def check_checkpoint(args):
    import torch
    from reference_gpt import load_checkpoint

    with open(os.path.join(args.data, "val", sorted(os.listdir(os.path.join(args.data, "val")))[0]), "rb") as f:
        raw = subprocess.run(["zstd", "-dc"], input=f.read(), check=True, capture_output=True).stdout
    texts = [json.loads(line)["text"][: args.chars] for line in raw.decode().splitlines()[:2]]
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "val"))
        stream = []
        for i, text in enumerate(texts):
            path = os.path.join(tmp, f"doc{i}.txt")
            with open(path, "w") as f:
                f.write(text)
            ids = subprocess.run([args.clocktrain, "tokenizer", "encode", "--tokenizer", args.checkpoint, "--file",
                                  path, "--bos"], check=True, capture_output=True, text=True).stdout.split()
            stream += [int(t) for t in ids]
        with open(os.path.join(tmp, "val", "val_000.jsonl"), "w") as f:
            for text in texts:
                f.write(json.dumps({"text": text}) + "\n")
        ct = json.loads(subprocess.run([args.clocktrain, "eval", "bpb", args.checkpoint, "--data", tmp, "--json"],
                                       check=True, capture_output=True, text=True).stdout)
    with open(os.path.join(args.checkpoint, "tokenizer_clocktrain.json")) as f:
        special = set(json.load(f)["special_tokens"].values())
    model = load_checkpoint(args.checkpoint)
    T = model.cfg.sequence_len
    nats, counted = 0.0, 0
    with torch.no_grad():
        for r in range(0, len(stream) - 1, T):
            row = torch.tensor(stream[r : r + T + 1])
            losses = model(row[None, :-1], row[None, 1:], reduction="none")[0].double()
            keep = torch.tensor([int(t) not in special for t in row[1:]])
            nats += float(losses[keep].sum())
            counted += int(keep.sum())
    rel = abs(nats - ct["nats"]) / abs(ct["nats"])
    ok = rel <= args.tolerance and counted == ct["counted_targets"]
    print(f"{'ok   ' if ok else 'FAIL '} checkpoint {args.checkpoint}: clocktrain {ct['nats']:.6f} nats over "
          f"{ct['counted_targets']} targets (loss {ct['nats'] / ct['counted_targets']:.6f}), torch {nats:.6f} over "
          f"{counted} (loss {nats / counted:.6f}); relative difference {rel:.2e} (tolerance {args.tolerance:g})")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="check", required=True)
    r = sub.add_parser("rows")
    r.add_argument("data")
    r.add_argument("seq_len", type=int)
    r.add_argument("batch_rows", type=int)
    r.add_argument("seed", type=int)
    r.add_argument("batches", type=int)
    r.add_argument("--bench", default=os.path.join(HERE, "..", "build", "release", "bench", "loader_rows_bench"))
    c = sub.add_parser("checkpoint")
    c.add_argument("checkpoint")
    c.add_argument("--clocktrain", default=os.path.join(HERE, "..", "build", "release", "clocktrain"))
    c.add_argument("--data", default=os.environ.get("CLOCKTRAIN_DATA", os.path.join(HERE, "..", "..", "shared", "data")))
    c.add_argument("--chars", type=int, default=6000)
    c.add_argument("--tolerance", type=float, default=1e-4)
    args = ap.parse_args()
    return check_rows(args) if args.check == "rows" else check_checkpoint(args)


if __name__ == "__main__":
    sys.exit(main())
