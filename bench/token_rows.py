"""The training rows of a prepared data folder in the order clocktrain's trainer reads them: a Python
port of src/data/loader.cpp (TokenLoader), so that the PyTorch side of bench/quality_per_clock.sh
trains on exactly the rows clocktrain does, batch by batch.

    rows = TokenRows(data_dir, "train", batch_rows=8, seq_len=512, seed=42)
    inputs, targets = rows.next_batch()        # int64 [batch_rows, seq_len]

Rows are windows k of seq_len + 1 tokens, tokens [k*T, k*T + T] of a shard (the last must end inside
it). Each epoch shuffles the shard order, and each shard's windows, with SplitMix64 keyed by the seed,
the epoch and the shard (Fisher-Yates, the same arithmetic mod 2^64); a batch that would run past the
epoch's end starts the next epoch. One process (rank 0 of 1). Shards are read through numpy.memmap
(docs/formats.md: 256 int32 header, then uint16 or uint32 tokens); the manifest's SHA-256 of each shard is
not recomputed here (clocktrain verifies it when it reads the same folder).
"""

import bisect
import json
import os

import numpy as np

MASK = (1 << 64) - 1
SHARD_ORDER_TAG = 0x73686172645F6F72  # "shard_or"
WINDOW_ORDER_TAG = 0x77696E646F775F6F  # "window_o"
SHARD_MAGIC = 20240520
HEADER_INTS = 256


class SplitMix64:
    def __init__(self, state):
        self.state = state & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def mix(a, b):
    return SplitMix64((a ^ SplitMix64(b).next()) & MASK).next()


def shuffled_indices(n, seed):
    out = list(range(n))
    g = SplitMix64(seed)
    for i in range(n, 1, -1):
        j = g.next() % i
        out[i - 1], out[j] = out[j], out[i - 1]
    return out


def open_shard(path):
    """The shard's tokens as a read-only array (uint16 for version 1, uint32 for version 2)."""
    header = np.fromfile(path, dtype="<i4", count=HEADER_INTS)
    magic, version, count = int(header[0]), int(header[1]), int(header[2])
    if magic != SHARD_MAGIC or version not in (1, 2):
        raise ValueError(f"{path}: not a token shard (magic {magic}, version {version})")
    dtype = "<u2" if version == 1 else "<u4"
    tokens = np.memmap(path, dtype=dtype, mode="r", offset=HEADER_INTS * 4)
    if tokens.shape[0] != count:
        raise ValueError(f"{path}: header says {count} tokens, the file holds {tokens.shape[0]}")
    return tokens


class TokenRows:
    def __init__(self, data_dir, split, batch_rows, seq_len, seed):
        with open(os.path.join(data_dir, "manifest.json")) as f:
            manifest = json.load(f)
        self.shards = [s for s in manifest["shards"] if s["split"] == split]
        if not self.shards:
            raise ValueError(f"{data_dir}/manifest.json: no shards for split {split!r}")
        self.dir, self.batch_rows, self.seq_len, self.seed = data_dir, batch_rows, seq_len, seed
        self.windows = [(s["tokens"] - 1) // seq_len if s["tokens"] > seq_len else 0 for s in self.shards]
        self.rows_per_epoch = sum(self.windows)
        if self.rows_per_epoch < batch_rows:
            raise ValueError(f"split {split!r} holds {self.rows_per_epoch} rows, fewer than one batch")
        self.epoch, self.epoch_row, self.layout_epoch = 0, 0, -1
        self.open = {}
        self.window_orders = {}

    def _layout(self):
        if self.layout_epoch == self.epoch:
            return
        self.layout_epoch = self.epoch
        self.shard_order = shuffled_indices(len(self.shards), mix(mix(self.seed, SHARD_ORDER_TAG), self.epoch))
        self.first_row, row = [], 0
        for shard in self.shard_order:
            self.first_row.append(row)
            row += self.windows[shard]
        self.window_orders = {}

    def _row(self, epoch_row):
        position = bisect.bisect_right(self.first_row, epoch_row) - 1
        shard = self.shard_order[position]
        if shard not in self.window_orders:
            key = mix(mix(mix(self.seed, WINDOW_ORDER_TAG), self.epoch), shard)
            self.window_orders[shard] = shuffled_indices(self.windows[shard], key)
        window = self.window_orders[shard][epoch_row - self.first_row[position]]
        if shard not in self.open:
            self.open[shard] = open_shard(os.path.join(self.dir, self.shards[shard]["name"]))
        start = window * self.seq_len
        return self.open[shard][start : start + self.seq_len + 1]

    def next_batch(self):
        """(inputs, targets), int64 [batch_rows, seq_len]: row[:-1] and row[1:] of the next rows."""
        if self.epoch_row + self.batch_rows > self.rows_per_epoch:
            self.epoch += 1
            self.epoch_row = 0
        self._layout()
        rows = np.stack([self._row(self.epoch_row + r) for r in range(self.batch_rows)]).astype(np.int64)
        self.epoch_row += self.batch_rows
        return rows[:, :-1], rows[:, 1:]
