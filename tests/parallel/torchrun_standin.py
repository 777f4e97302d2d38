#!/usr/bin/env python3
"""A stand-in for torchrun on machines without PyTorch 2 (CI's): the tests start CPU processes with it.

    torchrun_standin.py --nproc_per_node N --no-python COMMAND [ARGS...]

What clocktrain sees is what torchrun gives its workers: RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE=True and
TORCHELASTIC_RESTART_COUNT, with a key-value store listening at MASTER_ADDR:MASTER_PORT before the
workers start. The store answers the queries of PyTorch's TCPStore protocol that clocktrain sends
(VALIDATE, SET, GET, CHECK: torch/csrc/distributed/c10d/TCPStoreBackend.hpp); it is written from the
same reading of that source as clocktrain's client, so the tests that run under PyTorch's own
torchrun (where bench/torch2_venv.sh installed it) are what checks the reading.

One difference, on purpose: when a worker fails, torchrun stops the others; this stand-in lets them
run, so that a test sees them stop by themselves. It prints how each worker ended and exits 1 if any
failed.
"""
import os
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time

VALIDATE, SET, GET, CHECK = 0, 1, 3, 5
MAGIC = 0x3C85F7CE


class Store(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Connection)
        self.values = {}
        self.lock = threading.Lock()


class Connection(socketserver.BaseRequestHandler):
    def read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.request.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def read_sized(self):
        (length,) = struct.unpack("<Q", self.read(8))
        return self.read(length)

    def handle(self):
        try:
            if self.read(1)[0] != VALIDATE or struct.unpack("<I", self.read(4))[0] != MAGIC:
                return  # as PyTorch's store: a connection that does not validate first is closed
            while True:
                query = self.read(1)[0]
                if query == SET:
                    key, value = self.read_sized(), self.read_sized()
                    with self.server.lock:
                        self.server.values[key] = value
                elif query == GET:
                    key = self.read_sized()
                    with self.server.lock:
                        value = self.server.values[key]
                    self.request.sendall(struct.pack("<Q", len(value)) + value)
                elif query == CHECK:
                    (count,) = struct.unpack("<Q", self.read(8))
                    keys = [self.read_sized() for _ in range(count)]
                    with self.server.lock:
                        ready = all(k in self.server.values for k in keys)
                    self.request.sendall(bytes([0 if ready else 1]))
                else:
                    print(f"torchrun_standin: unexpected query {query}", file=sys.stderr)
                    return
        except (EOFError, ConnectionError):
            return


def main(argv):
    if len(argv) < 4 or argv[0] != "--nproc_per_node" or argv[2] != "--no-python":
        sys.exit("usage: torchrun_standin.py --nproc_per_node N --no-python COMMAND [ARGS...]")
    n, command = int(argv[1]), argv[3:]
    store = Store()
    threading.Thread(target=store.serve_forever, daemon=True).start()
    port = store.server_address[1]
    workers = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(n),
                   GROUP_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="0")
        env.setdefault("OMP_NUM_THREADS", "1")
        workers.append(subprocess.Popen(command, env=env))
    codes = [w.wait() for w in workers]
    for rank, code in enumerate(codes):
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        print(f"torchrun_standin: rank {rank} ended with {how}", file=sys.stderr)
    sys.exit(0 if all(c == 0 for c in codes) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
