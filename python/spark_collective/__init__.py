"""Collectives for PySpark barrier tasks, through the executor's spark-collective plugin.

Inside ``rdd.barrier().mapPartitions(f)``::

    import spark_collective
    comm = spark_collective.communicator()
    comm.all_reduce(grad)          # in place, summed across every task of the stage

The group is the task's barrier stage attempt and ``comm.rank`` its partition id, exactly as for a Java
task: the executor's JVM joins the group on the task's behalf and runs every algorithm, shared memory
between executors of a host, TLS and authentication as they are. Arrays go through memory that this
worker and the JVM both map, so nothing is serialised; an array made by ``comm.empty`` or ``comm.zeros``
lives in such memory, so the executor reduces it where it is, without a copy on either side::

    grad = comm.zeros(model.shape, dtype=np.float32)   # once
    np.dot(x.T, err, out=grad)                         # each step, computed into it
    comm.all_reduce(grad)
"""

from typing import Optional, Sequence, Tuple, Union

import numpy as np

from . import errors
from ._channel import Channel
from ._version import PLUGIN_VERSION, __version__
from .errors import (CollectiveAuthenticationError, CollectiveCancelledError, CollectiveError,
                     CollectiveMismatchError, CollectiveTimeoutError, CollectiveUsageError, PeerLostError,
                     RemoteFailureError, VersionMismatchError)

__all__ = [
    "communicator",
    "Communicator",
    "CollectiveError",
    "CollectiveUsageError",
    "VersionMismatchError",
    "PeerLostError",
    "RemoteFailureError",
    "CollectiveTimeoutError",
    "CollectiveMismatchError",
    "CollectiveCancelledError",
    "CollectiveAuthenticationError",
    "PLUGIN_VERSION",
    "__version__",
]

#: numpy dtype -> the engine's element type code (DType wire codes).
_DTYPES = {
    np.dtype(np.float32): 1,
    np.dtype(np.float64): 2,
    np.dtype(np.float16): 3,
    np.dtype(np.int32): 5,
    np.dtype(np.int64): 6,
}
#: reduction name -> ReduceOp wire code.
_OPS = {"sum": 1, "avg": 2, "mean": 2, "min": 3, "max": 4, "prod": 5}
_ALL_REDUCE, _REDUCE_SCATTER, _ALL_GATHER, _BROADCAST, _BARRIER = 1, 2, 3, 4, 5


def _check_array(a: object, operation: str, writes: bool = True) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise CollectiveUsageError(f"{operation} takes a numpy.ndarray, not {type(a).__name__}")
    if a.dtype not in _DTYPES:
        raise CollectiveUsageError(
            f"{operation}: unsupported dtype {a.dtype.str}; supported (native byte order): float32, float64, "
            "float16, int32, int64")
    if not a.flags.c_contiguous:
        raise CollectiveUsageError(
            f"{operation}: the array of shape {a.shape} is not C-contiguous; pass numpy.ascontiguousarray(a) and "
            "use the result")
    if writes and not a.flags.writeable:
        raise CollectiveUsageError(f"{operation}: the array of shape {a.shape} is read-only; the result is "
                                   "written into it in place (pass a writeable copy)")
    return a


def _op(op: str, operation: str, dtype: np.dtype) -> int:
    code = _OPS.get(str(op).lower())
    if code is None:
        raise CollectiveUsageError(f"{operation}: unknown op {op!r}; one of {', '.join(sorted(_OPS))}")
    if code == 2 and dtype.kind == "i":
        raise CollectiveUsageError(f"{operation}: op 'avg' needs a floating-point array, not {dtype}")
    return code


class Communicator:
    """The collectives of one barrier task's group (rank = partition id, size = number of tasks).

    One thread at a time; the calls block until done and raise a :class:`CollectiveError` (or subclass)
    naming the rank, operation and peer when the group fails.
    """

    def __init__(self, channel: Channel, task_attempt_id: int):
        self._channel = channel
        self.task_attempt_id = task_attempt_id
        #: This task's rank: its partition id.
        self.rank: int = channel.rank
        #: Number of tasks in the group.
        self.size: int = channel.size
        #: The group's name (application / stage / attempt).
        self.group: str = channel.group

    def __repr__(self) -> str:
        return f"Communicator(rank={self.rank}, size={self.size}, group={self.group!r})"

    def empty(self, shape: Union[int, Sequence[int]], dtype: object = np.float32) -> np.ndarray:
        """A new C-contiguous array in memory the executor maps too: collectives on it (or on any contiguous
        part of it) make no copy in Python or in the JVM. Valid for this task; its memory is released when the
        array and every view of it are gone.

        :param shape: as for :func:`numpy.empty`.
        :param dtype: float32, float64, float16, int32 or int64.
        """
        dt = np.dtype(dtype)
        if dt not in _DTYPES:
            raise CollectiveUsageError(f"empty: unsupported dtype {dt.str}; supported: float32, float64, float16, "
                                       "int32, int64")
        shape_t = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
        count = int(np.prod(shape_t, dtype=np.int64))
        m = self._channel.allocate(count * dt.itemsize)
        return np.frombuffer(m, dtype=dt, count=count).reshape(shape_t)

    def zeros(self, shape: Union[int, Sequence[int]], dtype: object = np.float32) -> np.ndarray:
        """As :meth:`empty`, filled with zeros."""
        a = self.empty(shape, dtype)
        a.fill(0)
        return a

    def _stage(self, a: np.ndarray, copy: bool = True) -> Tuple[Tuple[int, int], Optional[np.ndarray]]:
        """Where the call finds ``a``: in place if it lives in a segment of :meth:`empty`'s, else copied into
        the staging segment (if ``copy``). Returns (segment id, byte offset) and the staged view (None: in
        place)."""
        where = self._channel.locate(a)
        if where is not None:
            return where, None
        seg = self._channel.segment(a.nbytes)
        view = np.frombuffer(seg, dtype=a.dtype, count=a.size)
        if copy:
            np.copyto(view, a.reshape(-1))
        return (self._channel.staging_id, 0), view

    def all_reduce(self, array: np.ndarray, op: str = "sum", *, wire: Optional[str] = None) -> np.ndarray:
        """Reduces ``array`` across the group in place and returns it.

        :param array: C-contiguous, writeable, of float32, float64, float16, int32 or int64, any shape; the
            same shape and dtype on every rank.
        :param op: ``"sum"``, ``"avg"`` (floating point only), ``"min"``, ``"max"`` or ``"prod"``.
        :param wire: ``"bf16"`` sends a float32 array as bfloat16 (half the bytes, sums still in float32).
            A float16 array travels in its own 16 bits by default (sums in float32, each partial sum rounded
            to float16 where it is sent on); ``"f32"`` is the exact mode: float32 on the wire (twice the
            bytes) and one rounding, at the end.
        """
        a = _check_array(array, "all_reduce")
        code = _op(op, "all_reduce", a.dtype)
        w = self._wire(wire, a)
        if a.size == 0:
            return array
        where, view = self._stage(a)
        self._channel.call(_ALL_REDUCE, _DTYPES[a.dtype], code, w, 0, where, a.size)
        if view is not None:
            np.copyto(a.reshape(-1), view)
        return array

    def reduce_scatter(self, array: np.ndarray, op: str = "sum") -> np.ndarray:
        """Reduces ``array`` across the group and returns this rank's block of the result.

        The flattened array is cut into ``size`` blocks (the first ``len % size`` one element longer); the
        returned 1-D view into ``array`` holds block ``rank``. The other blocks hold partial sums afterwards.
        """
        a = _check_array(array, "reduce_scatter")
        code = _op(op, "reduce_scatter", a.dtype)
        flat = a.reshape(-1)
        if a.size == 0:
            return flat
        where, view = self._stage(a)
        off, n = self._channel.call(_REDUCE_SCATTER, _DTYPES[a.dtype], code, 0, 0, where, a.size)
        if view is not None:
            np.copyto(flat, view)
        return flat[off:off + n]

    def all_gather(self, array: np.ndarray, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Every rank's ``array`` in rank order: an array of shape ``(size,) + array.shape``.

        :param out: where to put it (C-contiguous, writeable, that shape and dtype); a new array if None.
        """
        a = _check_array(array, "all_gather", writes=False)
        shape = (self.size,) + a.shape
        if out is None:
            out = np.empty(shape, dtype=a.dtype)
        else:
            _check_array(out, "all_gather (out)")
            if out.shape != shape or out.dtype != a.dtype:
                raise CollectiveUsageError(
                    f"all_gather: out has shape {out.shape} and dtype {out.dtype}, not {shape} and {a.dtype}")
        if a.size == 0:
            return out
        src = self._channel.locate(a)
        dst = self._channel.locate(out)
        recv = None
        if src is None or dst is None:
            seg = self._channel.segment(a.nbytes * (self.size + 1))
            staging = self._channel.staging_id
            if src is None:
                np.copyto(np.frombuffer(seg, dtype=a.dtype, count=a.size), a.reshape(-1))
                src = (staging, 0)
            if dst is None:
                recv = np.frombuffer(seg, dtype=a.dtype, count=a.size * self.size, offset=a.nbytes)
                dst = (staging, a.nbytes)
        self._channel.call(_ALL_GATHER, _DTYPES[a.dtype], 0, 0, 0, src, a.size, dst)
        if recv is not None:
            np.copyto(out.reshape(-1), recv)
        return out

    def broadcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        """Copies rank ``root``'s ``array`` into every other rank's, in place, and returns it."""
        a = _check_array(array, "broadcast")
        if not isinstance(root, (int, np.integer)) or not 0 <= root < self.size:
            raise CollectiveUsageError(f"broadcast: root {root!r} is not a rank of this group of {self.size}")
        if a.size == 0:
            return array
        where, view = self._stage(a, copy=self.rank == root)
        self._channel.call(_BROADCAST, _DTYPES[a.dtype], 0, 0, int(root), where, a.size)
        if view is not None and self.rank != root:
            np.copyto(a.reshape(-1), view)
        return array

    def barrier(self) -> None:
        """Returns once every rank of the group has entered the barrier."""
        self._channel.call(_BARRIER, 0, 0, 0, 0, (0, 0), 0)

    def close(self) -> None:
        """Lets go of the connection (the group itself ends with the task)."""
        self._channel.close()

    @staticmethod
    def _wire(wire: Optional[str], a: np.ndarray) -> int:
        if wire is None:
            return 0
        if str(wire).lower() in ("bf16", "bfloat16"):
            if a.dtype != np.float32:
                raise CollectiveUsageError(f"all_reduce: wire='bf16' compresses float32 arrays, not {a.dtype}")
            return 1
        if str(wire).lower() in ("f32", "float32", "exact"):
            if a.dtype != np.float16:
                raise CollectiveUsageError(f"all_reduce: wire='f32' (the exact mode) is for float16 arrays, "
                                           f"not {a.dtype}")
            return 2
        raise CollectiveUsageError(f"all_reduce: unknown wire type {wire!r}; None, 'bf16' or 'f32'")


_current: Optional[Communicator] = None


def communicator() -> Communicator:
    """The communicator of the calling barrier task (the group forms on its first collective call).

    :raises CollectiveUsageError: outside a Spark task, outside a barrier stage, or where the plugin is not
        loaded, saying what to add.
    """
    global _current
    from pyspark import BarrierTaskContext, TaskContext

    tc = TaskContext.get()
    if tc is None:
        raise CollectiveUsageError(
            "spark_collective.communicator() is called outside a Spark task; call it inside the function given "
            "to rdd.barrier().mapPartitions(...)")
    if not isinstance(tc, BarrierTaskContext):
        raise CollectiveUsageError(
            "spark_collective.communicator() needs a barrier stage: run the stage with "
            "rdd.barrier().mapPartitions(...)")
    attempt = tc.taskAttemptId()
    if _current is not None and _current.task_attempt_id == attempt:
        return _current
    if _current is not None:
        _current.close()
        _current = None
    stage_attempt = tc.stageAttemptNumber() if hasattr(tc, "stageAttemptNumber") else -1
    channel = Channel(attempt, tc.stageId(), stage_attempt, tc.partitionId())
    _current = Communicator(channel, attempt)
    return _current
