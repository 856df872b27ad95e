"""The Python client's own cost per call, without Spark: the real ``spark_collective`` channel against a stand-in
executor (a child process that answers HELLO, then every request at once with a successful CALL reply), so
that what is timed is the worker's side of one request and reply over the Unix socket: its Python code, its
system calls and the two wake-ups across processes. Prints wall and CPU time (user and system, this process
only) per call, median of rounds.

Usage: python python/benchmarks/channel_overhead.py [--calls 20000] [--rounds 5]
(with the package installed, or from the repository root with ``python`` on the path).
"""

import argparse
import os
import socket
import statistics
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import spark_collective  # noqa: E402
from spark_collective import _channel  # noqa: E402


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<H", len(b)) + b


def _read(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _executor(server: socket.socket, segment_dir: str) -> None:
    """The stand-in executor: HELLO, then an OK reply of a CALL (two zero longs) to every request."""
    conn, _ = server.accept()
    with conn:
        (n,) = struct.unpack("<I", _read(conn, 4))
        _read(conn, n)
        reply = (bytes([0]) + struct.pack("<ii", 0, 1) + _string(spark_collective.PLUGIN_VERSION)
                 + _string("app/stage-1/attempt-0") + _string(segment_dir) + struct.pack("<q", 60_000))
        conn.sendall(struct.pack("<I", len(reply)) + reply)
        ok = struct.pack("<I", 17) + bytes([0]) + struct.pack("<qq", 0, 0)
        try:
            while True:
                (n,) = struct.unpack("<I", _read(conn, 4))
                _read(conn, n)
                conn.sendall(ok)
        except (EOFError, OSError):
            pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        pid = os.fork()
        if pid == 0:
            try:
                _executor(server, d)
            finally:
                os._exit(0)
        server.close()
        with open(os.path.join(d, _channel.ANNOUNCEMENT), "w", encoding="utf-8") as f:
            f.write(f"version={spark_collective.PLUGIN_VERSION}\nsocket={path}\ntoken={'ab' * 32}\n")
        os.environ["SPARK_LOCAL_DIRS"] = d
        channel = _channel.Channel(1, 1, 0, 0)
        wall, cpu = [], []
        try:
            for _ in range(args.rounds):
                c0, t0 = time.process_time(), time.perf_counter()
                for _ in range(args.calls):
                    channel.call(1, 1, 1, 0, 0, (1, 0), 1000)
                wall.append((time.perf_counter() - t0) / args.calls * 1e6)
                cpu.append((time.process_time() - c0) / args.calls * 1e6)
        finally:
            channel.close()
            os.waitpid(pid, 0)
    print(f"spark_collective {spark_collective.__version__}, {args.calls} calls x {args.rounds} rounds: "
          f"{statistics.median(wall):.1f} us wall, {statistics.median(cpu):.1f} us CPU per call (median round)")


if __name__ == "__main__":
    main()
