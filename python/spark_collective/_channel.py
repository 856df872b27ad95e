"""The Python worker's connection to its own executor JVM (see PythonSession.java for the protocol).

The executor announces a Unix-domain socket (in a directory only its user can enter) and a token in a
file in each of its local directories, which Spark hands its Python workers as ``SPARK_LOCAL_DIRS``.
Arrays travel through segments: files this worker creates in the directory the executor names, maps,
and hands over; the executor maps them too and deletes their names at once. One segment stages arrays
(copied in and out around each call); arrays made by ``Communicator.empty`` live in a segment of their
own, which calls use in place.
"""

import mmap
import os
import secrets
import socket
import struct
import sys
import weakref
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import errors
from ._version import PLUGIN_VERSION

ANNOUNCEMENT = "spark-collective-python"
SEGMENT_PREFIX = "spark-collective-py-"
PROTOCOL = 3
#: Seconds to wait for the executor's answer to HELLO (it closes a connection that says nothing for 10 s).
HELLO_WAIT_S = 30.0
HELLO, MAP, CALL, UNMAP = 1, 2, 3, 4
MIN_SEGMENT = 1 << 20
#: Every reply is read into one buffer of this size kept for them (the longest, an error, is 16 KiB and a few
#: bytes: the executor cuts its message there); a longer one means the stream is broken.
REPLY_BUFFER = 1 << 15
_LEN = struct.Struct("<I")
_CALL = struct.Struct("<BBBBiiqqiq")
_OK_CALL = struct.Struct("<qq")
_ERROR = struct.Struct("<iI")


def _announcement() -> Dict[str, str]:
    dirs = [d for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if d]
    for d in dirs:
        path = os.path.join(d, ANNOUNCEMENT)
        try:
            with open(path, "r", encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise errors.CollectiveUsageError(f"cannot read {path}: {e}") from e
        info = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        missing = [k for k in ("version", "socket", "token") if k not in info]
        if missing:
            raise errors.CollectiveUsageError(f"{path} lacks {', '.join(missing)}: it was not written by the "
                                              "spark-collective plugin, or only in part")
        return info
    where = ", ".join(dirs) if dirs else "(SPARK_LOCAL_DIRS is not set)"
    raise errors.CollectiveUsageError(
        "the spark-collective plugin is not running on this executor (no announcement in its local "
        f"directories {where}): add --conf spark.plugins=io.sparkcollective.spark.CollectivePlugin and the "
        "plugin jar with --jars; if it is loaded, the executor's log says why its Python channel did not open")


def _string(b: bytes, at: int) -> Tuple[str, int]:
    (n,) = struct.unpack_from("<H", b, at)
    return b[at + 2:at + 2 + n].decode("utf-8"), at + 2 + n


def _put_string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<H", len(b)) + b


class Channel:
    """One task's connection: hello, then segments and calls, one at a time."""

    def __init__(self, task_attempt_id: int, stage_id: int, stage_attempt: int, partition_id: int):
        info = _announcement()
        if info.get("version") != PLUGIN_VERSION:
            raise errors.VersionMismatchError(
                f"the spark-collective plugin jar on this executor is version {info.get('version')}, this "
                f"Python package (spark_collective) belongs to {PLUGIN_VERSION}: install the package of the "
                "jar's version (or ship its zip with --py-files)")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(HELLO_WAIT_S)
        try:
            self._sock.connect(info["socket"])
        except OSError as e:
            self._sock.close()
            raise errors.CollectiveUsageError(
                f"cannot reach this executor's spark-collective socket {info.get('socket')}: {e}") from e
        self._segment: Optional[mmap.mmap] = None
        self._reply_view = memoryview(bytearray(REPLY_BUFFER))
        self._answer_within_s = HELLO_WAIT_S
        self._segment_id = 0
        self._capacity = 0
        #: Segments of arrays made by allocate(): id -> (start address, length); ids of those since dropped.
        self._owned: Dict[int, Tuple[int, int]] = {}
        self._dropped: List[int] = []
        try:
            token = bytes.fromhex(info["token"])
            body = (bytes([HELLO]) + b"SCPY" + struct.pack("<H", PROTOCOL) + token
                    + bytes([0 if sys.byteorder == "little" else 1]) + _put_string(PLUGIN_VERSION)
                    + struct.pack("<qiii", task_attempt_id, stage_id, stage_attempt, partition_id))
            reply = self._request(body)
            self.rank, self.size = struct.unpack_from("<ii", reply, 1)
            self.jvm_version, at = _string(reply, 9)
            self.group, at = _string(reply, at)
            self.segment_dir, at = _string(reply, at)
            (answer_within_ms,) = struct.unpack_from("<q", reply, at)
            # Every later request is answered within that (the formation's and an operation's timeouts, and a
            # margin): waiting longer would only hide an executor that stopped answering. The kernel keeps that
            # deadline (SO_RCVTIMEO, SO_SNDTIMEO) on a blocking socket: a socket with a Python timeout polls
            # before every send and receive, twice the system calls per request.
            self._answer_within_s = answer_within_ms / 1000.0
            deadline = struct.pack("ll", answer_within_ms // 1000, (answer_within_ms % 1000) * 1000)
            self._sock.settimeout(None)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, deadline)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, deadline)
        except BaseException:
            self.close()
            raise

    def _request(self, body: bytes) -> bytes:
        try:
            self._sock.sendall(_LEN.pack(len(body)) + body)
            reply = self._reply()
        except (socket.timeout, BlockingIOError) as e:  # BlockingIOError: SO_RCVTIMEO or SO_SNDTIMEO ran out
            raise errors.CollectiveTimeoutError(
                f"this executor's spark-collective channel did not answer within {self._answer_within_s:g} s "
                "(longer than its group formation and operation timeouts together): the executor is stuck or "
                "overloaded") from e
        except (ConnectionError, EOFError, OSError) as e:
            raise errors.CollectiveError(f"the connection to this executor's spark-collective channel broke: {e}") \
                from e
        if reply[0] != 0:
            rank, n = _ERROR.unpack_from(reply, 1)
            message = reply[9:9 + n].decode("utf-8", "replace")
            raise errors.BY_KIND.get(reply[0], errors.CollectiveError)(message, None if rank < 0 else rank)
        return reply

    def _reply(self) -> bytes:
        """The reply to the request just sent. The executor sends nothing unasked, so whatever arrives belongs to
        it: one system call usually reads its length and body together."""
        view = self._reply_view
        got = self._fill(view, 0, 4, len(view))
        end = 4 + _LEN.unpack_from(view, 0)[0]
        if end > len(view):
            self.close()  # what follows cannot be read as replies any more
            raise ConnectionError(f"the executor sent a reply of {end - 4} bytes; none is longer than "
                                  f"{len(view) - 4}")
        self._fill(view, got, end, end)
        return bytes(view[4:end])

    def _fill(self, view: memoryview, got: int, need: int, limit: int) -> int:
        """Receives into ``view[got:limit]`` until at least ``need`` bytes are there; returns how many are."""
        while got < need:
            k = self._sock.recv_into(view[got:limit])
            if k == 0:
                raise EOFError("the executor closed the connection (its task ended, or it is shutting down)"
                               if got == 0 else "the executor closed the connection in the middle of a reply")
            got += k
        return got

    def _map(self, capacity: int) -> Tuple[int, mmap.mmap]:
        """A new segment of ``capacity`` bytes, mapped here and by the executor: (its id, its mapping)."""
        path = os.path.join(self.segment_dir, SEGMENT_PREFIX + f"{os.getpid()}-{secrets.token_hex(8)}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.ftruncate(fd, capacity)
            m = mmap.mmap(fd, capacity)
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)
        try:
            reply = self._request(bytes([MAP]) + struct.pack("<q", capacity) + _put_string(os.path.basename(path)))
        except BaseException:
            m.close()
            raise
        finally:
            if os.path.exists(path):  # the executor deletes it once mapped; not if it refused
                os.unlink(path)
        (segment_id,) = struct.unpack_from("<i", reply, 1)
        return segment_id, m

    def segment(self, nbytes: int) -> mmap.mmap:
        """The staging segment, grown (to a power of two) to at least ``nbytes``."""
        if self._segment is not None and self._capacity >= nbytes:
            return self._segment
        capacity = max(MIN_SEGMENT, 1 << max(0, nbytes - 1).bit_length())
        segment_id, m = self._map(capacity)
        old, old_id = self._segment, self._segment_id
        self._segment, self._segment_id, self._capacity = m, segment_id, capacity
        if old is not None:
            self._dropped.append(old_id)
            try:
                old.close()
            except BufferError:
                pass  # a view is still exported; freed when it is
        return m

    @property
    def staging_id(self) -> int:
        return self._segment_id

    def allocate(self, nbytes: int) -> mmap.mmap:
        """A segment of its own for an array of ``nbytes``; the executor lets go of it once it is dropped here."""
        segment_id, m = self._map(max(nbytes, 1))
        start = np.frombuffer(m, dtype=np.uint8).ctypes.data
        self._owned[segment_id] = (start, nbytes)
        weakref.finalize(m, self._drop, segment_id)
        return m

    def _drop(self, segment_id: int) -> None:
        # Runs when the mapping is collected, at any point of this worker's code: only note it here.
        if self._owned.pop(segment_id, None) is not None:
            self._dropped.append(segment_id)

    def locate(self, a: np.ndarray) -> Optional[Tuple[int, int]]:
        """(segment id, byte offset) if ``a``'s memory lies in a segment made by :meth:`allocate`, else None."""
        if not self._owned:
            return None
        start = a.ctypes.data
        for segment_id, (base, length) in list(self._owned.items()):  # finalizers may change it
            if base <= start and start + a.nbytes <= base + length:
                return segment_id, start - base
        return None

    def _unmap_dropped(self) -> None:
        while self._dropped:
            self._request(bytes([UNMAP]) + struct.pack("<i", self._dropped.pop()))

    def call(self, collective: int, dtype: int, op: int, wire: int, root: int, where: Tuple[int, int], count: int,
             out: Tuple[int, int] = (0, 0)) -> Tuple[int, int]:
        """Runs one collective on ``count`` elements at ``where`` = (segment id, byte offset)."""
        if self._dropped:
            self._unmap_dropped()
        reply = self._request(bytes([CALL]) + _CALL.pack(collective, dtype, op, wire, root, where[0], where[1], count,
                                                         out[0], out[1]))
        return _OK_CALL.unpack_from(reply, 1)

    def close(self) -> None:
        try:
            self._sock.close()
        finally:
            if self._segment is not None:
                try:
                    self._segment.close()
                except BufferError:
                    pass
                self._segment = None
