#!/usr/bin/python3
"""Golden vectors for clocktrain's pre-tokenizer, computed with Python's `regex` module.

Each output line is a JSON object {"name", "input_b64", "chunk_lengths"}: the input bytes and the
byte lengths of the chunks that regex.findall(PATTERN, text) returns, where text is the input decoded
with errors="surrogateescape" (each invalid UTF-8 byte becomes one lone surrogate, which is neither
a letter, a number nor a space) and each chunk is encoded back the same way.

Inputs: fixed cases (contractions, digits, punctuation, CRLF, tabs, emoji, CJK, Arabic, combining
marks, invalid UTF-8), random strings from a fixed seed, and a few excerpts of English prose from
the training corpus. The excerpts are read from the corpus only with --corpus DIR; otherwise they are
taken from the existing golden file, so regenerating never depends on corpus offsets.

  gen_pretokenize_golden.py --corpus ../shared/data/corpus --out tests/golden/pretokenize.jsonl
  gen_pretokenize_golden.py --check tests/golden/pretokenize.jsonl   # exit 1 if it differs
"""
import argparse
import base64
import json
import random
import subprocess
import sys
from pathlib import Path

import regex

PATTERN = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}|"
           r" ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+")
COMPILED = regex.compile(PATTERN)

FIXED_TEXT = {
    "empty": "",
    "contractions_lower": "I'm sure they'll say it's what we've done, you're right, he'd go, don't",
    "contractions_upper": "I'M SURE THEY'LL SAY IT'S WHAT WE'VE DONE, YOU'RE RIGHT, HE'D GO, DON'T",
    "contractions_mixed": "'S 's 'lL 'Ll 'vE 'Ve 'rE 'Re 'D 'M 'T 'x 'ſ ''s ' s  'll've's",
    "contractions_edges": "'", "apostrophe_end": "abc'", "apostrophe_l": "'l", "curly": "it’s don’t",
    "digits": "0 12 345 6789 1234567890 3.14159 1,000,000 2024-05-20 v1.2.3 x86_64",
    "digits_unicode": "٠١٢٣٤٥ ४२ Ⅻ ½ ² ³⁴ ①② 𝟙𝟚𝟛",
    "punctuation": "Hello, world!!! ... ?!? -- --- (a) [b] {c} <d> \"e\" #$%&*+/=@\\^_`|~",
    "punctuation_space": " ... !!! ,,, a . b .\n.\n\n x",
    "crlf": "line one\r\nline two\r\n\r\n  \r\n x\r\r\n\n\rend\r\n",
    "tabs": "\tindent\t\tx  \t  y\t\n\t z \t",
    "trailing_space": "abc   ",
    "only_spaces": "     ",
    "newlines": "\n\n\n",
    "space_then_newline": "a  \n  b \n\n c",
    "spaces_before_punct": "a   !b    .c",
    "whitespace_zoo": "a\x0bb\x0cc\x85d\xa0e\u1680f\u2000g\u2009h\u200ai\u2028j\u2029k\u202fl\u205fm\u3000n",
    "not_whitespace": "a\x1cb\x1dc\x1ed\x1ff\u200bg\u180eh\ufeffi",
    "controls": "a\x00b\x01\x02c\x7fd\x1b[0me",
    "emoji": "I ❤️ 🍕! 👨‍👩‍👧 family 🇫🇷 flag 👍🏽 ok😀😀",
    "cjk": "日本語のテキスト。中文，繁體字。한국어 텍스트입니다. 東京2020年",
    "arabic": "مرحبا بالعالم! هذا نص عربي ١٢٣ و٤٥٦.",
    "hebrew": "שָׁלוֹם עוֹלָם",
    "devanagari": "नमस्ते दुनिया १२३",
    "thai": "สวัสดีชาวโลก",
    "combining": "cafe\u0301 e\u0301te\u0301 Z\u0324\u0354\u0367\u0311\u0313 a\u0308\u0301b n\u0303o",
    "titlecase": "ǅungla ǈ ǋ ᾈ",
    "mixed_scripts": "Ελληνικά кириллица English123 ümlaut ß ﬁ ﬂ Straße",
    "long_letters": "a" * 300 + " " + "é" * 100,
    "long_spaces": " " * 200 + "x" + " " * 200,
    "long_digits": "9" * 101,
    "long_punct": "!" * 150 + "\n" * 3 + "?",
    "code": "def f(x):\n    return x**2  # square\n\nif __name__ == '__main__':\n\tprint(f(3))\n",
    "json_like": '{"id": 12, "text": "a\\nb", "ok": true}',
    "url": "https://example.com/path?q=1&r=two#frag mail@example.org",
}

FIXED_BYTES = {
    "invalid_lone": b"\xff\xfe abc \x80\x80 def",
    "invalid_mixed": b"ok \xc3( \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf \xe0\x80\x80 end",
    "invalid_truncated_end": b"abc\xe2\x82",
    "invalid_before_letters": b"\x80abc \x80 abc \xff123 \xfe\n",
    "invalid_apostrophe": b"'\x80s '\xc5 '\xc5\xbf",
    "invalid_spaces": b" \x80  \xff\r\n\xfe",
    "latin1": "caf\xe9 na\xefve \xbfqu\xe9?".encode("latin-1"),
}

# Code points that exercise every branch of the pattern, for random strings.
POOL = (list("abcXYZ") + list("0189") + list(" \t\n\r\x0b\x0c") + list("'\".,!?-()") +
        ["s", "S", "l", "L", "v", "e", "E", "r", "d", "m", "t", "T"] * 2 +
        ["\u017f", "\u00e9", "\u0301", "\u0308", "\u00a0", "\u0085", "\u2000", "\u3000", "\u2028",
         "\x1c", "\x00", "\u200b", "\u00bd", "\u00b2", "\u2167", "\u0663", "\u65e5", "\u672c",
         "\u3002", "\u0645", "\u0631", "\u05d0", "\u01c5", "\u02b0", "\U0001F600", "\u2764",
         "\ufe0f", "\u200d", "\U0001F1EB", "\U0001D7D9", "\U00010400"])
INVALID = [b"\x80", b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90"]


def random_cases(seed=20240520, count=400):
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        parts = []
        for _ in range(rng.randrange(0, 40)):
            if rng.random() < 0.04:
                parts.append(rng.choice(INVALID))
            else:
                parts.append(rng.choice(POOL).encode("utf-8"))
        cases.append((f"random/{i:03d}", b"".join(parts)))
    for i in range(60):  # raw random bytes, biased to ASCII
        data = bytes(rng.randrange(0, 128) if rng.random() < 0.7 else rng.randrange(128, 256)
                     for _ in range(rng.randrange(1, 64)))
        cases.append((f"random_bytes/{i:03d}", data))
    return cases


def corpus_excerpts(corpus_dir):
    """A few fixed excerpts of prose: the first three documents of the first shard."""
    shard = sorted(Path(corpus_dir).glob("*.jsonl.zst"))[0]
    out = subprocess.run(["zstd", "-dc", str(shard)], check=True, capture_output=True).stdout
    cases = []
    for doc_index, line in enumerate(out.splitlines()[:3]):
        text = json.loads(line)["text"]
        start = min(20000, len(text) // 2)
        cases.append((f"corpus/{shard.name}/doc{doc_index}", text[start:start + 3000].encode("utf-8")))
    return cases


def excerpts_from_golden(path):
    cases = []
    for line in Path(path).read_text().splitlines():
        obj = json.loads(line)
        if obj["name"].startswith("corpus/"):
            cases.append((obj["name"], base64.b64decode(obj["input_b64"])))
    return cases


def split_lengths(data):
    text = data.decode("utf-8", errors="surrogateescape")
    chunks = [m.encode("utf-8", errors="surrogateescape") for m in COMPILED.findall(text)]
    assert b"".join(chunks) == data
    return [len(c) for c in chunks]


def generate(excerpts):
    cases = [(f"fixed/{k}", v.encode("utf-8")) for k, v in FIXED_TEXT.items()]
    cases += [(f"fixed/{k}", v) for k, v in FIXED_BYTES.items()]
    cases += random_cases() + excerpts
    lines = []
    for name, data in cases:
        obj = {"name": name, "input_b64": base64.b64encode(data).decode("ascii"),
               "chunk_lengths": split_lengths(data)}
        lines.append(json.dumps(obj, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="corpus folder to take the prose excerpts from")
    ap.add_argument("--out", help="golden file to write")
    ap.add_argument("--check", help="golden file to compare a fresh generation against")
    args = ap.parse_args()
    if args.corpus:
        excerpts = corpus_excerpts(args.corpus)
    else:
        source = args.check or args.out
        if not source or not Path(source).exists():
            sys.exit("gen_pretokenize_golden.py: give --corpus, or an existing golden file to take the excerpts from")
        excerpts = excerpts_from_golden(source)
    text = generate(excerpts)
    if args.check:
        old = Path(args.check).read_text()
        if old != text:
            old_lines, new_lines = old.splitlines(), text.splitlines()
            for i, (a, b) in enumerate(zip(old_lines, new_lines)):
                if a != b:
                    print(f"first difference at line {i + 1}:\n checked in: {a[:300]}\n generated:  {b[:300]}")
                    break
            else:
                print(f"line counts differ: checked in {len(old_lines)}, generated {len(new_lines)}")
            sys.exit(1)
        print(f"{args.check}: {len(text.splitlines())} cases match a fresh generation")
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}: {len(text.splitlines())} cases")


if __name__ == "__main__":
    main()
