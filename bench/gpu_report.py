#!/usr/bin/env python3
"""Summarises bench/gpu_check.sh's stages (files in WORK) into one table, printed last, and
results.json (everything measured, machine-readable).

usage: gpu_report.py WORK RESULTS_JSON
       gpu_report.py --run WORK RESULT_JSON   (bench/gpu_check.sh run: the timed run's result.json)
"""
import json
import os
import sys

PEAK_BF16 = 989.4e12  # H100/H200 SXM dense bf16, the data sheet's number
# docs/model.md baseline, nanochat's count (src/model/config.h flops_per_token):
#   6 * (parameters - wte) + 12 * layers * width * T
BASELINE_FLOPS_PER_TOKEN = 6 * (59_637_760 - 8192 * 640) + 12 * 10 * 640 * 1024


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def json_lines(path, prefix="json: "):
    """Every line that is a JSON object (after `prefix`, when it starts with it) of a log."""
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        text = line[len(prefix):] if line.startswith(prefix) else line
        if text.startswith("{"):
            try:
                found.append(json.loads(text))
            except ValueError:
                continue
    return found


def json_line(path, prefix="json: "):
    found = json_lines(path, prefix)
    return found[-1] if found else None


def gtest_summary(report):
    if not report:
        return None
    failed, skipped, passed = [], [], 0
    for suite in report.get("testsuites", []):
        for test in suite.get("testsuite", []):
            name = suite["name"] + "." + test["name"]
            if test.get("failures"):
                failed.append((name, test["failures"][0].get("failure", "").splitlines()[:3]))
            elif test.get("result") == "SKIPPED" or test.get("status") == "NOTRUN":
                skipped.append(name)
            else:
                passed += 1
    return dict(passed=passed, failed=failed, skipped=skipped)


def main():
    work, results_path = sys.argv[1], sys.argv[2]
    results = dict(stages=open(os.path.join(work, "stages.txt")).read().splitlines()
                   if os.path.exists(os.path.join(work, "stages.txt")) else [])
    lines = []
    for stage in results["stages"]:
        lines.append("  " + stage)
        if "FAILED" in stage or "TIMED OUT" in stage:  # the end of its log, so one device call shows why
            name = stage.split()[1].rstrip(":")
            try:
                tail = [l for l in open(os.path.join(work, name + ".log"), errors="replace").read().splitlines() if l.strip()][-6:]
            except OSError:
                tail = ["(no log)"]
            lines.extend("      | " + l[:150] for l in tail)

    p = gtest_summary(load_json(os.path.join(work, "parity.json")))
    if p is not None:
        results["parity"] = dict(passed=p["passed"], failed=[n for n, _ in p["failed"]], skipped=p["skipped"])
        lines.append(f"parity (test_backend_cuda): {p['passed']} passed, {len(p['failed'])} failed, {len(p['skipped'])} skipped")
        for name, message in p["failed"][:12]:
            lines.append(f"  FAILED {name}: {' / '.join(m.strip() for m in message)[:160]}")

    ops = load_json(os.path.join(work, "ops.json")) or []
    results["ops"] = ops
    matmul_peak = next((o["rate"] * 1e12 for o in ops if o["op"] == "matmul_peak"), None)
    copy_bandwidth = next((o["rate"] for o in ops if o["op"] == "copy_bandwidth"), None)
    if ops:
        lines.append("ops at the baseline's shapes (backend_ops_bench, median of 10):")
        for o in ops:
            lines.append(f"  {o['op']:<24} {o['shape']:<26} {o['ms']:9.3f} ms {o['rate']:9.1f} {o['unit']}")

    trains = json_lines(os.path.join(work, "train.log"))
    train = trains[0] if trains else None
    torch = load_json(os.path.join(work, "torch.json")) or json_line(os.path.join(work, "torch.log"), prefix="")
    results["train"], results["torch"] = trains, torch

    rows = []
    for t in trains:
        tps = t.get("tokens_per_second")
        step_ms = t.get("step_ms") or (1000.0 * t["step_seconds"] if "step_seconds" in t else None)
        flops = t.get("flops_per_token", BASELINE_FLOPS_PER_TOKEN)
        memory = t.get("memory_bytes", 0) / 2**30 if t.get("memory_bytes") else None
        label = "clocktrain cuda " + t.get("matmul_precision", "?") + (" graphs" if t.get("graphs") else " eager") + \
            (" fp8" if t.get("fp8") else "") + (" cudnn-attn" if t.get("attention") == "cudnn" else "") + \
            (" profiled" if t.get("profiled") else "")
        rows.append((label, tps, step_ms, flops, memory))
        if "losses" in t:
            lines.append(f"  {label}: losses {', '.join(f'{l:.3f}' for l in t['losses'][:3])} ... {t['losses'][-1]:.3f}")
    if torch:
        rows.append((torch.get("implementation", "pytorch"), torch["tokens_per_second"], torch["step_ms"],
                     torch.get("flops_per_token", BASELINE_FLOPS_PER_TOKEN), torch.get("peak_memory_gib")))

    lines.append("")
    lines.append("baseline recipe (model.md: 10 x 640, T 1024, 65,536 tokens per step), bf16:")
    header = f"  {'run':<48} {'tokens/s':>11} {'step ms':>9} {'MFU@989T':>9} {'MFU@meas':>9} {'mem GiB':>8}"
    lines.append(header)
    for name, tps, step_ms, flops, memory in rows:
        mfu = flops * tps / PEAK_BF16 if tps else None
        mfu_measured = flops * tps / matmul_peak if tps and matmul_peak else None
        fmt = lambda v, f: (f.format(v) if v is not None else "-")
        lines.append(f"  {name[:48]:<48} {fmt(tps, '{:,.0f}'):>11} {fmt(step_ms, '{:.1f}'):>9} "
                     f"{fmt(mfu and 100 * mfu, '{:.1f}%'):>9} {fmt(mfu_measured and 100 * mfu_measured, '{:.1f}%'):>9} "
                     f"{fmt(memory, '{:.1f}'):>8}")
    if train and torch and rows[0][1] and torch.get("tokens_per_second"):
        ratio = rows[0][1] / torch["tokens_per_second"]
        results["ratio_clocktrain_over_torch"] = ratio
        lines.append(f"  clocktrain / pytorch tokens/s: {ratio:.2f}x   (targets: >= 1.2x, >= 40% MFU ~ 0.98M tokens/s)")
    elif not train:
        lines.append("  clocktrain: no training measurement (see the train stage above)")
    ceilings = []
    if matmul_peak:
        ceilings.append(f"matmul 8192^3 bf16 {matmul_peak / 1e12:.0f} TFLOP/s")
    if copy_bandwidth:
        ceilings.append(f"copy {copy_bandwidth / 1000:.2f} TB/s")
    if ceilings:
        lines.append("  measured ceilings: " + ", ".join(ceilings))
    results["matmul_peak_flops"], results["copy_bandwidth_gbs"] = matmul_peak, copy_bandwidth
    with open(results_path, "w") as f:
        json.dump(results, f, indent=1)
    print("\n".join(lines))


def run_report():
    """result.json of `gpu_check.sh run`: the trainer's summary, and val_bpb and CORE as the evaluator
    computed them from the saved checkpoint (never from the trainer's logs). Assembled by this script,
    not by `clocktrain run` (the harness), so it carries no gate verdict: the facts the gate would
    check are listed for a reader."""
    work, result_path = sys.argv[2], sys.argv[3]
    stages = open(os.path.join(work, "stages.txt")).read().splitlines() if os.path.exists(os.path.join(work, "stages.txt")) else []
    summary = load_json(os.path.join(work, "run", "train_summary.json"))
    bpb = load_json(os.path.join(work, "bpb.json"))
    core = load_json(os.path.join(work, "core.json"))
    subset = None
    try:
        subset = open(os.path.join(".gpu_data", "prepared", "SUBSET.txt")).read().strip()
    except OSError:
        pass
    result = dict(kind="bench/gpu_check.sh run (not the harness: no gate verdict)",
                  recipe="recipes/baseline-cuda.toml", budget_seconds=int(os.environ.get("run_budget", "180")),
                  data_subset=subset, stages=stages, train_summary=summary,
                  val_bpb=bpb.get("val_bpb") if bpb else None, bpb=bpb,
                  core=core.get("core") if core else None, core_max_per_task=500, core_result=core)
    with open(result_path, "w") as f:
        json.dump(result, f, indent=1)
    lines = ["  " + st for st in stages]
    for st in stages:
        if "FAILED" in st or "TIMED OUT" in st:
            name = st.split()[1].rstrip(":")
            try:
                tail = [l for l in open(os.path.join(work, name + ".log"), errors="replace").read().splitlines() if l.strip()][-6:]
            except OSError:
                tail = ["(no log)"]
            lines.extend("      | " + l[:150] for l in tail)
    lines.append("")
    lines.append(f"timed baseline run on the GPU (recipes/baseline-cuda.toml, budget {result['budget_seconds']} s):")
    if summary:
        for k, v in summary.items():  # its scalar fields (steps, tokens, clock, startup, stop reason, losses, ...)
            if not isinstance(v, (dict, list)):
                lines.append(f"  {k:<24} {v}")
    else:
        lines.append("  no train_summary.json (see the train stage above)")
    lines.append(f"  {'val_bpb':<24} {result['val_bpb'] if result['val_bpb'] is not None else '-'}")
    lines.append(f"  {'CORE (500 per task)':<24} {result['core'] if result['core'] is not None else '-'}")
    if subset:
        lines.append(f"  data: {subset}")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--run":
        run_report()
    else:
        main()
