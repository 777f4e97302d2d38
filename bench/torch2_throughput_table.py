"""The summary of bench/torch2_throughput.sh: from the runs' JSON lines (train_throughput_bench's and
torch_reference.py's), the median tokens/s of clocktrain, PyTorch 2 eager and PyTorch 2 compiled per
recipe and precision, the ratios, and the targets: clocktrain >= 1.5x eager, >= 1.2x compiled.

usage: torch2_throughput_table.py RESULTS_JSONL
"""

import json
import statistics
import sys

TARGETS = {"eager": 1.5, "compile": 1.2}


def fwd_bwd(r):
    """forward + backward seconds: clocktrain's step times them together (one wait per step), torch apart."""
    return r["forward_backward_seconds"] if "forward_backward_seconds" in r else r["forward_seconds"] + r["backward_seconds"]


def projected(r):
    """tokens/s at the recipe's own batch: forward+backward scale with the tokens, the optimizer step does not."""
    scale = r["recipe_tokens_per_step"] / r["tokens_per_step"]
    return r["recipe_tokens_per_step"] / (scale * fwd_bwd(r) + r["optimizer_seconds"])


def precision(r):
    return r.get("matmul_precision") or r.get("precision", "f32")


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print(f"\n{'recipe':<10} {'matmuls':>7} {'tokens/step':>11} {'threads':>7} {'clocktrain':>10} {'eager':>8} "
          f"{'compiled':>8} {'ct/eager':>8} {'ct/comp':>8}  targets (>= 1.5x eager, >= 1.2x compiled)")
    for recipe in dict.fromkeys(r["recipe"] for r in rows):
        for prec in dict.fromkeys(precision(r) for r in rows if r["recipe"] == recipe):
            runs = [r for r in rows if r["recipe"] == recipe and precision(r) == prec]
            ct = [r for r in runs if r["impl"] == "clocktrain"]
            torch = {m: [r for r in runs if r["impl"] == "torch" and r["mode"] == m] for m in TARGETS}
            if not ct:
                continue
            rates = {"clocktrain": statistics.median(r["tokens_per_second"] for r in ct)}
            rates.update({m: statistics.median(r["tokens_per_second"] for r in t) for m, t in torch.items() if t})
            projected_shape = ct[0]["tokens_per_step"] != ct[0]["recipe_tokens_per_step"]
            for label, rate in (("measured", lambda rs: statistics.median(r["tokens_per_second"] for r in rs)),
                                ("projected", lambda rs: statistics.median(projected(r) for r in rs))):
                if label == "projected" and not projected_shape:
                    continue
                tps = {"clocktrain": rate(ct), **{m: rate(t) for m, t in torch.items() if t}}
                cells, verdicts = [], []
                for m, target in TARGETS.items():
                    if m in tps:
                        ratio = tps["clocktrain"] / tps[m]
                        cells.append(f"{ratio:>7.2f}x")
                        verdicts.append(f"{m} {'met' if ratio >= target else 'MISSED'}")
                    else:
                        cells.append(f"{'-':>8}")
                name = recipe if label == "measured" else f"  at {ct[0]['recipe_tokens_per_step']}"
                print(f"{name:<10} {prec:>7} {ct[0]['tokens_per_step'] if label == 'measured' else ct[0]['recipe_tokens_per_step']:>11} "
                      f"{ct[0]['threads']:>7} {tps['clocktrain']:>10.0f} "
                      f"{tps.get('eager', float('nan')):>8.0f} {tps.get('compile', float('nan')):>8.0f} "
                      f"{' '.join(cells)}  {', '.join(verdicts)}"
                      + ("  (projected from the measured phases)" if label == "projected" else ""))
            for r in ct:
                print(f"{'':<10} clocktrain round: {r['tokens_per_second']:.0f} tok/s (fwd+bwd {fwd_bwd(r):.2f} s, "
                      f"opt {r['optimizer_seconds']:.2f} s, {100 * r['fraction_of_peak']:.0f}% of the "
                      f"{r['gemm_peak_flops'] / 1e9:.0f} GFLOP/s GEMM peak measured beside it)")
            for m, t in torch.items():
                for r in t:
                    print(f"{'':<10} torch {m} round: {r['tokens_per_second']:.0f} tok/s (fwd {r['forward_seconds']:.2f} s, "
                          f"bwd {r['backward_seconds']:.2f} s, opt {r['optimizer_seconds']:.2f} s; warm-up incl. "
                          f"compilation {r['warmup_wall_seconds']:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1])
