"""The worker never waits on its executor without a deadline: an executor that takes HELLO and then stops
answering fails the next request with a timeout error naming the channel, within the wait HELLO announced
(kept by the kernel on a blocking socket). Nor does it take an executor's word for a reply's length: one
longer than any reply breaks the connection instead of being allocated."""

import os
import socket
import struct
import tempfile
import threading
import time

import pytest

import spark_collective
from spark_collective import _channel, errors


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<H", len(b)) + b


class _SilentExecutor:
    """Answers HELLO (announcing `answer_within_ms`), then reads requests and answers each with the bytes
    `answer` (none: never answers)."""

    def __init__(self, directory: str, answer_within_ms: int, answer: bytes = b""):
        self.path = os.path.join(directory, "s")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(1)
        self.answer_within_ms = answer_within_ms
        self.answer = answer
        self.hello = None
        self.requests = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _read(self, conn, n):
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def _serve(self):
        conn, _ = self.server.accept()
        with conn:
            try:
                (n,) = struct.unpack("<I", self._read(conn, 4))
                self.hello = self._read(conn, n)
                reply = (bytes([0]) + struct.pack("<ii", 1, 2) + _string(spark_collective.PLUGIN_VERSION)
                         + _string("app/stage-1/attempt-0") + _string(tempfile.gettempdir())
                         + struct.pack("<q", self.answer_within_ms))
                conn.sendall(struct.pack("<I", len(reply)) + reply)
                while True:
                    (n,) = struct.unpack("<I", self._read(conn, 4))
                    self._read(conn, n)
                    self.requests += 1
                    if self.answer:
                        conn.sendall(self.answer)
            except (EOFError, OSError):
                pass

    def close(self):
        self.server.close()


def _connect(d: str, executor: _SilentExecutor, monkeypatch) -> _channel.Channel:
    with open(os.path.join(d, _channel.ANNOUNCEMENT), "w", encoding="utf-8") as f:
        f.write(f"version={spark_collective.PLUGIN_VERSION}\nsocket={executor.path}\ntoken={'ab' * 32}\n")
    monkeypatch.setenv("SPARK_LOCAL_DIRS", d)
    return _channel.Channel(7, 1, 0, 1)


@pytest.mark.timeout(60)
def test_a_reply_longer_than_any_reply_breaks_the_connection(monkeypatch):
    with tempfile.TemporaryDirectory() as d:
        # A length of 2 GiB, then a few bytes: the worker must neither allocate it nor wait for the rest.
        executor = _SilentExecutor(d, answer_within_ms=30_000, answer=struct.pack("<I", 1 << 31) + b"\0" * 64)
        channel = _connect(d, executor, monkeypatch)
        try:
            start = time.monotonic()
            with pytest.raises(errors.CollectiveError, match="a reply of 2147483648 bytes; none is longer than"):
                channel._request(bytes([_channel.UNMAP]) + struct.pack("<i", 5))
            assert time.monotonic() - start < 5
            assert channel._sock.fileno() == -1, "the connection is closed: what follows is not a reply"
        finally:
            channel.close()
            executor.close()


@pytest.mark.timeout(60)
def test_a_request_the_executor_does_not_answer_times_out_within_the_announced_wait(monkeypatch):
    with tempfile.TemporaryDirectory() as d:
        executor = _SilentExecutor(d, answer_within_ms=300)
        channel = _connect(d, executor, monkeypatch)
        try:
            assert (channel.rank, channel.size) == (1, 2)
            assert executor.hello[5:7] == struct.pack("<H", _channel.PROTOCOL)
            # The kernel keeps the deadline on a blocking socket (a Python-level timeout would poll before every
            # send and receive: twice the system calls of a request).
            assert channel._sock.gettimeout() is None
            for option in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
                assert struct.unpack("ll", channel._sock.getsockopt(socket.SOL_SOCKET, option, 16)) == (0, 300_000)
            start = time.monotonic()
            with pytest.raises(errors.CollectiveTimeoutError, match="did not answer within"):
                channel._request(bytes([_channel.UNMAP]) + struct.pack("<i", 5))
            waited = time.monotonic() - start
            assert 0.25 <= waited < 5, waited
            assert executor.requests == 1
        finally:
            channel.close()
            executor.close()
