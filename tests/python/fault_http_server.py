"""A loopback HTTP server for the download tests: serves the files of a folder, with faults chosen
by the first path component (the rest names the file):

  /ok/NAME          the file; a Range request gets 206 and the rest
  /cut/NAME         the first request for NAME announces the whole length, sends half, and drops
                    the connection; later ones behave as /ok (so a resumed download completes)
  /cutalways/NAME   every request is cut that way (a download that cannot complete)
  /norange/NAME     ignores Range: always 200 with the whole file
  /slow/NAME        sends the headers and one byte, then nothing for 30 s
  /corrupt/NAME     the file with one byte changed (a checksum that does not match)
  /404/NAME         404 Not Found

  fault_http_server.py FOLDER INFO_FILE LOG_FILE
Writes "PORT PID" into INFO_FILE once listening; appends "PATH RANGE" per request to LOG_FILE.
"""
import http.server
import os
import sys
import threading
import time

folder, info_file, log_file = sys.argv[1:4]
counts = {}
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        parts = self.path.lstrip("/").split("/", 1)
        mode, name = (parts + [""])[:2]
        with lock:
            counts[self.path] = counts.get(self.path, 0) + 1
            count = counts[self.path]
            with open(log_file, "a") as log:
                log.write(f"{self.path} {self.headers.get('Range', '-')}\n")
        path = os.path.join(folder, name)
        if mode == "404" or not os.path.isfile(path):
            self.send_error(404)
            return
        data = open(path, "rb").read()
        if mode == "corrupt":
            data = data[:10] + bytes([data[10] ^ 0xFF]) + data[11:]
        start = 0
        header = self.headers.get("Range")
        if header and mode != "norange" and header.startswith("bytes=") and header.endswith("-"):
            start = int(header[6:-1])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        body = data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if mode == "slow":
            # One byte, then nothing: libcurl's speed (bytes over its last few seconds) falls below the
            # stall limit of 1 byte/s after the stall timeout, where ten bytes kept it above for ~6 s.
            self.wfile.write(body[:1])
            self.wfile.flush()
            time.sleep(30)
            return
        if (mode == "cut" and count == 1) or mode == "cutalways":
            self.wfile.write(body[: max(1, len(body) // 2)])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(info_file + ".tmp", "w") as f:
    f.write(f"{server.server_address[1]} {os.getpid()}\n")
os.rename(info_file + ".tmp", info_file)
server.serve_forever()
