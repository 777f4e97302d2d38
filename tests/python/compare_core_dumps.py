#!/usr/bin/python3
"""Compares two CORE dumps (`clocktrain eval core --dump-prompts FILE` and tests/python/core_reference.py
--out FILE): per row the few-shot indices, prompts, token sequences, spans and flags must be equal;
mean losses must agree within --loss-tolerance (0 = exactly, as with the fake models); verdicts and
per-task accuracies must agree, except that with a real model up to --max-verdict-diffs rows may flip
where two choices' mean losses are within --loss-tolerance of each other (a float-rounding tie).

Usage: compare_core_dumps.py A.json B.json [--loss-tolerance X] [--max-verdict-diffs N]
Prints a summary line per task and every difference (the first 20 per kind); exit 1 on any mismatch.
"""
import argparse
import json
import math
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--loss-tolerance", type=float, default=0.0)
    ap.add_argument("--max-verdict-diffs", type=int, default=0)
    args = ap.parse_args()
    a = json.load(open(args.a, encoding="utf-8"))
    b = json.load(open(args.b, encoding="utf-8"))
    problems = []

    def problem(text):
        problems.append(text)
        if len(problems) <= 20:
            print("DIFF", text)

    for key in ["metric", "tasks_evaluated", "missing_tasks", "max_per_task", "task_subset"]:
        if a[key] != b[key]:
            problem(f"{key}: {a[key]!r} != {b[key]!r}")
    if [t["label"] for t in a["tasks"]] != [t["label"] for t in b["tasks"]]:
        problem("task lists differ")
        return finish(problems)
    verdict_diffs = 0
    for ta, tb in zip(a["tasks"], b["tasks"]):
        label = ta["label"]
        for key in ["shots", "type", "rows", "truncated_rows", "clamped_rows", "prefix_mismatch_rows",
                    "random_baseline_percent"]:
            if ta[key] != tb[key]:
                problem(f"{label}: {key}: {ta[key]!r} != {tb[key]!r}")
        rows_a, rows_b = ta.get("row_records", []), tb.get("row_records", [])
        if len(rows_a) != len(rows_b):
            problem(f"{label}: {len(rows_a)} != {len(rows_b)} row records")
        max_loss_diff = 0.0
        task_verdict_diffs = 0
        for ra, rb in zip(rows_a, rows_b):
            where = f"{label} row {ra['idx']} (line {ra['line']})"
            for key in ["idx", "line", "fewshot", "prompts", "prefix_mismatch", "truncated", "clamped", "sequences"]:
                if ra[key] != rb[key]:
                    problem(f"{where}: {key} differs")
            ma, mb = ra["mean_losses"], rb["mean_losses"]
            if len(ma) != len(mb) or any((x is None) != (y is None) for x, y in zip(ma, mb)):
                problem(f"{where}: mean_losses {ma} != {mb}")
                continue
            row_diff = max([abs(x - y) for x, y in zip(ma, mb) if x is not None], default=0.0)
            max_loss_diff = max(max_loss_diff, row_diff)
            if row_diff > args.loss_tolerance:
                problem(f"{where}: mean loss differs by {row_diff:g} > {args.loss_tolerance:g}")
            if ra["pred"] != rb["pred"] or ra["correct"] != rb["correct"]:
                task_verdict_diffs += 1
                near_tie = len(ma) > 1 and all(v is not None for v in ma) and \
                    sorted(ma)[1] - sorted(ma)[0] <= 2 * args.loss_tolerance
                if args.loss_tolerance == 0 or (ma and not near_tie):
                    problem(f"{where}: verdict {ra['pred']}/{ra['correct']} != {rb['pred']}/{rb['correct']}")
        verdict_diffs += task_verdict_diffs
        if task_verdict_diffs == 0 and (ta["correct"] != tb["correct"] or ta["accuracy"] != tb["accuracy"]):
            problem(f"{label}: accuracy {ta['accuracy']} != {tb['accuracy']}")
        print(f"{label:34s} rows {ta['rows']:6d} accuracy {ta['accuracy']:.4f} / {tb['accuracy']:.4f} "
              f"max |mean loss diff| {max_loss_diff:.3g} verdict diffs {task_verdict_diffs}")
    if verdict_diffs > args.max_verdict_diffs:
        problem(f"{verdict_diffs} verdicts differ (allowed {args.max_verdict_diffs})")
    if verdict_diffs == 0 and not math.isclose(a["core"], b["core"], rel_tol=0, abs_tol=1e-12):
        problem(f"core {a['core']} != {b['core']}")
    return finish(problems)


def finish(problems):
    print(f"{len(problems)} differences" if problems else "dumps agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
