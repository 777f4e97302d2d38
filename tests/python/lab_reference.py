#!/usr/bin/env python3
"""Reference values for the lab's statistics (tests/lab), computed with numpy and scipy.

Reads a JSON object of cases on stdin and writes the same keys with the results on stdout.
Independent of the C++ code: each formula is scipy's own (t.ppf, linregress, ttest_rel, ttest_ind)
or written here from the definitions in docs/lab.md.
"""
import json
import math
import sys

import numpy as np
from scipy import special, stats


def mde(se, df, confidence, power):
    return (stats.t.ppf(1 - (1 - confidence) / 2, df) + stats.t.ppf(power, df)) * se


def noise(case):
    by_seed = {}
    for seed, value in case["values"]:
        by_seed.setdefault(seed, []).append(value)
    means = np.array([np.mean(v) for v in by_seed.values()])
    out = {"mean": float(np.mean([v for _, v in case["values"]])), "seeds": len(by_seed)}
    out["seed_spread"] = float(np.std(means, ddof=1)) if len(means) >= 2 else None
    within_ss = sum(float(np.sum((np.array(v) - np.mean(v)) ** 2)) for v in by_seed.values())
    within_df = sum(len(v) - 1 for v in by_seed.values())
    out["repeat_std"] = math.sqrt(within_ss / within_df) if within_df else None
    out["pair_noise"] = math.sqrt(2) * out["repeat_std"] if within_df else None
    # pair noise from the differences directly when every seed ran exactly twice
    if all(len(v) == 2 for v in by_seed.values()):
        diffs = np.array([v[0] - v[1] for v in by_seed.values()])
        out["pair_noise_from_differences"] = float(np.sqrt(np.mean(diffs ** 2)))
    r_h = len(by_seed) / sum(1.0 / len(v) for v in by_seed.values())
    if out["seed_spread"] is not None:
        rep2 = out["repeat_std"] ** 2 if out["repeat_std"] is not None else 0.0
        out["single_run_std"] = math.sqrt(out["seed_spread"] ** 2 + (1 - 1 / r_h) * rep2)
    out["mde"] = {}
    for n in case["n"]:
        row = {}
        if out.get("single_run_std") is not None:
            row["unpaired"] = float(mde(out["single_run_std"] * math.sqrt(2 / n), 2 * n - 2,
                                        case["confidence"], case["power"]))
        if out["pair_noise"] is not None:
            row["paired"] = float(mde(out["pair_noise"] / math.sqrt(n), n - 1, case["confidence"], case["power"]))
        out["mde"][str(n)] = row
    return out


def verdict(case):
    t_vals = np.array(case["treatment"])
    c_vals = np.array(case["control"])
    conf = case["confidence"]
    if case.get("paired"):
        d = t_vals - c_vals  # aligned by seed by the caller
        res = stats.ttest_rel(t_vals, c_vals)
        effect = float(np.mean(d))
        se = float(np.std(d, ddof=1) / math.sqrt(len(d)))
        df = len(d) - 1
        # scipy's statistic is effect / se
        assert abs(res.statistic - effect / se) < 1e-9 * max(1, abs(res.statistic))
    else:
        res = stats.ttest_ind(t_vals, c_vals, equal_var=True)
        effect = float(np.mean(t_vals) - np.mean(c_vals))
        df = len(t_vals) + len(c_vals) - 2
        se = effect / float(res.statistic)
    tq = stats.t.ppf(0.5 + conf / 2, df)
    return {"effect": effect, "standard_error": abs(se), "df": df,
            "interval": [effect - tq * abs(se), effect + tq * abs(se)],
            "mde": float(mde(abs(se), df, conf, case["power"]))}


def elasticity(case):
    # case: levels -> list of [x, y]; ranges between adjacent levels sorted by mean x
    levels = sorted(case["levels"], key=lambda pts: np.mean([p[0] for p in pts]))
    out = []
    for low, high in zip(levels, levels[1:]):
        pts = low + high
        fit = stats.linregress([p[0] for p in pts], [p[1] for p in pts])
        out.append({"slope": fit.slope, "stderr": fit.stderr if len(pts) > 2 else None})
    return out


def main():
    cases = json.load(sys.stdin)
    out = {}
    if "t_ppf" in cases:
        out["t_ppf"] = [float(stats.t.ppf(p, df)) for p, df in cases["t_ppf"]]
    if "t_cdf" in cases:
        out["t_cdf"] = [float(stats.t.cdf(t, df)) for t, df in cases["t_cdf"]]
    if "norm_ppf" in cases:
        out["norm_ppf"] = [float(stats.norm.ppf(p)) for p in cases["norm_ppf"]]
    if "betainc" in cases:
        out["betainc"] = [float(special.betainc(a, b, x)) for a, b, x in cases["betainc"]]
    if "mde" in cases:
        out["mde"] = [float(mde(se, df, c, pw)) for se, df, c, pw in cases["mde"]]
    if "linregress" in cases:
        out["linregress"] = []
        for xs, ys in cases["linregress"]:
            fit = stats.linregress(xs, ys)
            out["linregress"].append({"slope": fit.slope, "intercept": fit.intercept, "stderr": fit.stderr})
    if "noise" in cases:
        out["noise"] = [noise(c) for c in cases["noise"]]
    if "verdict" in cases:
        out["verdict"] = [verdict(c) for c in cases["verdict"]]
    if "elasticity" in cases:
        out["elasticity"] = [elasticity(c) for c in cases["elasticity"]]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
