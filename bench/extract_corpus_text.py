#!/usr/bin/python3
"""Writes the first MAX_CHARS characters of the training corpus as plain text, the same text that
`clocktrain tokenizer train --max-chars MAX_CHARS` reads: the "text" field of each document of
corpus/*.jsonl.zst in file-name order, the last document cut to fit (characters are code points).

  extract_corpus_text.py DATA_DIR MAX_CHARS OUT_FILE

Documents are written one after another, each followed by a line break, so that line-oriented
trainers (sentencepiece's spm_train takes one sentence per line) see the same text.
"""
import json
import subprocess
import sys
from pathlib import Path


def main():
    data_dir, max_chars, out_path = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    left = max_chars
    docs = 0
    with open(out_path, "w", encoding="utf-8", errors="surrogateescape") as out:
        for shard in sorted((data_dir / "corpus").glob("*.jsonl.zst")):
            proc = subprocess.Popen(["zstd", "-dc", str(shard)], stdout=subprocess.PIPE)
            for line in proc.stdout:
                if not line.strip():
                    continue
                text = json.loads(line)["text"][:left]
                out.write(text)
                out.write("\n")
                left -= len(text)
                docs += 1
                if left == 0:
                    break
            proc.stdout.close()
            proc.kill()
            proc.wait()
            if left == 0:
                break
    print(f"extract_corpus_text.py: {docs} documents, {max_chars - left} characters -> {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
