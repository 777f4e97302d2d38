"""Reads a run folder's TensorBoard event files with TensorBoard's own reader and compares every scalar
with metrics.jsonl (tests/train/event_file_test.cpp runs it; docs/formats.md, "TensorBoard events").

    tensorboard_check.py RUN_FOLDER

The expected tags are derived here from metrics.jsonl by the rule docs/formats.md states, independently
of the C++ code: each scalar must be there, at its step and wall time, as a float32, and nothing else.
Prints one summary line; exits 1 on the first mismatch, 2 when the tensorboard package is missing."""
import json
import math
import os
import struct
import sys

try:
    from tensorboard.backend.event_processing import event_accumulator
except ImportError as e:
    print(f"tensorboard_check.py: no tensorboard package ({e}): scripts/install-pyarrow.sh installs it")
    sys.exit(2)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def expected_scalars(rows):
    out = {}
    for row in rows:
        kind = row.get("kind")
        if kind == "train":
            pairs = [(f"train/{f}", row.get(f)) for f in
                     ("loss", "lr_factor", "grad_norm", "tokens_per_second", "mfu", "step_seconds")]
        elif kind == "eval":
            pairs = [(f"eval/{row.get('split', 'eval')}_loss", row.get("loss")), ("eval/val_bpb", row.get("val_bpb"))]
        else:
            continue
        for tag, value in pairs:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.setdefault(tag, []).append((row["step"], row["time"], f32(value)))
    return out


def main():
    run = sys.argv[1]
    with open(os.path.join(run, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    expected = expected_scalars(rows)
    folder = os.path.join(run, "tensorboard")
    files = [n for n in os.listdir(folder) if "tfevents" in n]
    if len(files) != 1:
        sys.exit(f"{folder}: {len(files)} event files, expected 1: {files}")
    acc = event_accumulator.EventAccumulator(folder, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    got_tags = set(acc.Tags()["scalars"])
    if got_tags != set(expected):
        sys.exit(f"{folder}: tags {sorted(got_tags)}, metrics.jsonl gives {sorted(expected)}")
    count = 0
    for tag, want in expected.items():
        got = [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]
        if len(got) != len(want):
            sys.exit(f"{tag}: {len(got)} scalars, metrics.jsonl has {len(want)}")
        for (gs, gw, gv), (ws, ww, wv) in zip(got, want):
            if gs != ws or gw != ww or not (gv == wv or (math.isnan(gv) and math.isnan(wv))):
                sys.exit(f"{tag}: got step {gs} time {gw} value {gv}, metrics.jsonl: step {ws} time {ww} value {wv}")
            count += 1
    print(f"tensorboard_check: {count} scalars in {len(expected)} tags agree with metrics.jsonl")


main()
