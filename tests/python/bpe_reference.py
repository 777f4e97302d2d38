#!/usr/bin/python3
"""An independent reader of clocktrain tokenizer folders, for parity tests.

  bpe_reference.py TOKENIZER_DIR TEXTS_JSON [--impl auto|tiktoken|reference]

TEXTS_JSON holds a JSON list of strings. Prints a JSON list with the token ids of each string,
encoded as ordinary text (special-token names are not treated specially). With tiktoken importable
(--impl auto), Python's tiktoken loads the files unchanged; otherwise (or --impl reference) a plain
implementation of the same format does: tokenizer.tiktoken gives the rank of each token's bytes,
tokenizer.json the split pattern, applied with the `regex` module; each chunk that is a token is that
token, otherwise its bytes are merged pairwise, always the leftmost adjacent pair whose concatenation
has the lowest rank, until no adjacent pair is a token.
"""
import argparse
import base64
import json
import sys
from pathlib import Path


def load_ranks(path):
    ranks = {}
    for line in Path(path).read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
    return ranks


def bpe(piece, ranks):
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best_rank, best = None, None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best_rank, best = rank, i
        if best is None:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return [ranks[p] for p in parts]


def tokenizer_json(folder):
    """The folder's JSON file: tokenizer_clocktrain.json, or tokenizer.json in folders written before the rename
    (src/text/tokenizer.h)."""
    path = Path(folder) / "tokenizer_clocktrain.json"
    return path if path.exists() or not (Path(folder) / "tokenizer.json").exists() else Path(folder) / "tokenizer.json"


class ReferenceEncoding:
    def __init__(self, folder):
        import regex
        meta = json.loads(tokenizer_json(folder).read_text())
        self.pattern = regex.compile(meta["pattern"])
        self.ranks = load_ranks(Path(folder) / "tokenizer.tiktoken")

    def encode_ordinary(self, text):
        ids = []
        for piece in self.pattern.findall(text):
            b = piece.encode("utf-8")
            rank = self.ranks.get(b)
            ids.extend([rank] if rank is not None else bpe(b, self.ranks))
        return ids


def tiktoken_encoding(folder):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    meta = json.loads(tokenizer_json(folder).read_text())
    return tiktoken.Encoding(name="clocktrain", pat_str=meta["pattern"],
                             mergeable_ranks=load_tiktoken_bpe(str(Path(folder) / "tokenizer.tiktoken")),
                             special_tokens=meta["special_tokens"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer_dir")
    ap.add_argument("texts_json")
    ap.add_argument("--impl", choices=["auto", "tiktoken", "reference"], default="auto")
    args = ap.parse_args()
    impl = args.impl
    if impl == "auto":
        try:
            import tiktoken  # noqa: F401
            impl = "tiktoken"
        except ImportError:
            impl = "reference"
    enc = tiktoken_encoding(args.tokenizer_dir) if impl == "tiktoken" else ReferenceEncoding(args.tokenizer_dir)
    texts = json.loads(Path(args.texts_json).read_text())
    print(f"bpe_reference.py: encoding {len(texts)} texts with {impl}", file=sys.stderr)
    json.dump([enc.encode_ordinary(t) for t in texts], sys.stdout)


if __name__ == "__main__":
    main()
