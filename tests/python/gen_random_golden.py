#!/usr/bin/python3
"""Golden vectors for ct::PythonRandom (src/util/python_random.h), produced by the system python3.

Usage: gen_random_golden.py [OUT.json]   (stdout when no file is given)

Every case starts from a fresh random.Random(seed). Big values (getrandbits with k > 53) are written
as hex strings; floats as float.hex() so they compare bit for bit. The test
tests/util/python_random_test.cpp reruns this script and requires its output to equal the checked-in
tests/golden/python_random.json, then checks the C++ generator against every case.
"""
import json
import math
import random
import sys

SEEDS = [0, 1, 42, 1337, -1337, 1234, 1235, 1234 + 999, 2**31 - 1, 2**32 - 1, 2**32, 2**32 + 7,
         2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, 2**64 + 12345, 3**50, -(7**40),
         12345678901234567890123456789]


def sample_strategy(n, k):
    # mirrors Lib/random.py (3.11) sample(): True = pool method, False = set method
    setsize = 21
    if k > 5:
        setsize += 4 ** math.ceil(math.log(k * 3, 4))
    return n <= setsize


def case(seed):
    out = {"seed": str(seed)}
    r = random.Random(seed)
    out["uint32"] = [r.getrandbits(32) for _ in range(8)]
    r = random.Random(seed)
    out["random"] = [r.random().hex() for _ in range(6)]
    r = random.Random(seed)
    bits = [0, 1, 5, 31, 32, 33, 53, 63, 64, 65, 96, 100, 200]
    out["getrandbits"] = [[k, hex(r.getrandbits(k))] for k in bits]
    r = random.Random(seed)
    bounds = [1, 2, 3, 7, 10, 100, 1000, 2**31, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 1, 10**15, 2**63, 2**64 - 1]
    out["randbelow"] = [[str(n), str(r._randbelow(n))] for n in bounds]
    shuffles = []
    for m in [0, 1, 2, 3, 10, 100, 300]:
        x = list(range(m))
        random.Random(seed).shuffle(x)
        shuffles.append(x)
    out["shuffle"] = shuffles
    samples = []
    # (n, k) pairs covering both strategies and their boundary (see sample_strategy).
    for n, k in [(1, 0), (1, 1), (5, 3), (10, 10), (21, 5), (22, 5), (30, 6), (57, 6), (58, 6), (60, 10),
                 (85, 10), (86, 10), (100, 10), (200, 21), (277, 22), (278, 22), (1000, 3), (1000, 10),
                 (10041, 10), (10041, 3), (500, 300), (3000, 600)]:
        pool = sample_strategy(n, k)
        samples.append({"n": n, "k": k, "pool": pool, "result": random.Random(seed).sample(range(n), k)})
    out["sample"] = samples
    return out


def fewshot_cases():
    # The CORE procedure itself: Random(1337).shuffle of the rows, then for a row idx
    # Random(1234 + idx).sample([i for i in range(n) if i != idx], k).
    cases = []
    for n, k in [(100, 10), (32, 10), (230, 3), (1172, 10), (10042, 10), (12, 5), (7, 6)]:
        order = list(range(n))
        random.Random(1337).shuffle(order)
        picks = []
        for idx in sorted({0, 1, n // 2, n - 1}):
            available = [i for i in range(n) if i != idx]
            picks.append({"idx": idx, "fewshot": random.Random(1234 + idx).sample(available, k)})
        cases.append({"n": n, "k": k, "shuffle1337": order, "picks": picks})
    return cases


def main():
    doc = {"cases": [case(s) for s in SEEDS], "core": fewshot_cases()}
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
