"""Python tasks that fail, die or misuse the API: peers fail fast, Spark's retry succeeds, errors are clear."""

import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

TASKS = 4
LENGTH = 1 << 16
STEPS = 40


def _marker(d: str, name: str, text: str = "") -> None:
    tmp = os.path.join(d, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(d, name))


def _first_time(d: str, name: str) -> bool:
    """True exactly once per directory and name (the faulted attempt)."""
    try:
        os.close(os.open(os.path.join(d, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def _training_task(d: str, victim: int, fault: str):
    def task(it):
        import signal

        import spark_collective

        from pyspark import TaskContext
        rank = TaskContext.get().partitionId()
        faulted = rank == victim and _first_time(d, "faulted")
        if faulted and fault == "raise-before":
            _marker(d, "fault", repr(time.time()))
            raise RuntimeError("injected: rank fails before its first call")
        started = time.time()
        comm = spark_collective.communicator()
        x = np.zeros(LENGTH, dtype=np.float32)
        try:
            for step in range(STEPS):
                x[:] = rank + step
                comm.all_reduce(x)
                if faulted and step == 1:
                    _marker(d, "fault", repr(time.time()))
                    if fault == "raise-after":
                        raise RuntimeError("injected: rank fails after its first calls")
                    os.kill(os.getpid(), signal.SIGKILL)  # the Python worker dies
                if rank != victim and os.path.exists(os.path.join(d, "fault")) and step < STEPS - 1:
                    time.sleep(0.05)  # the fault is out: wait in the next call rather than race to the end
        except spark_collective.CollectiveError as e:
            if rank != victim:
                _marker(d, f"peer-{rank}-{TaskContext.get().attemptNumber()}",
                        f"{time.time()!r} {started!r} {type(e).__name__} {e}")
            raise
        yield rank, float(x[0])
    return task


@pytest.mark.parametrize("fault", ["raise-before", "raise-after", "kill-worker"])
def test_a_failing_python_task_fails_its_peers_fast_and_the_retry_succeeds(sc, fault):
    d = tempfile.mkdtemp(prefix="sc-py-fault-")
    t0 = time.time()
    rows = (sc.parallelize(range(TASKS), TASKS).barrier().mapPartitions(_training_task(d, 2, fault))
            .map(lambda r: (r[0], r)).partitionBy(1).values().collect())
    took = time.time() - t0
    expected = float(sum(r + STEPS - 1 for r in range(TASKS)))
    assert sorted(rows) == [(r, expected) for r in range(TASKS)], rows
    fault_at = float(open(os.path.join(d, "fault")).read())
    peers = [f for f in os.listdir(d) if f.startswith("peer-")]
    # Every surviving peer of the faulted attempt failed within 2 s of the fault, or of its own first call if
    # it started later (a peer's task may start after the victim already failed).
    assert peers, f"no peer saw the fault ({fault}); the job took {took:.1f} s"
    # Spark 4 reports an executor's first failed Python task 0.4-2.0 s late, with or without the plugin and
    # however soon the task raised (later ones: 0.02-0.04 s); raise-before runs first, so it pays that, and the
    # plugin learns of the failure from Spark: that case gets 3 s there (a Java task that throws before its
    # first call: 52-67 ms on the same line).
    import pyspark
    bound = 3.0 if fault == "raise-before" and pyspark.__version__.startswith("4") else 2.0
    lags = []
    for f in peers:
        at, started, kind, message = open(os.path.join(d, f)).read().split(" ", 3)
        lag = float(at) - max(fault_at, float(started))
        lags.append(round(lag, 3))
        assert lag < bound, f"{f} failed {lag:.2f} s after the fault (started {float(started) - fault_at:.2f} s after " \
                          f"it): {kind} {message}"
        assert kind in ("RemoteFailureError", "PeerLostError", "CollectiveCancelledError", "CollectiveError"), kind
        assert "rank 2" in message, message
        if fault != "kill-worker":  # the peers are told what the Python task raised
            assert "RuntimeError: injected: rank fails" in message, message
    print(f"{fault}: {len(peers)} peers failed {sorted(lags)} s after the fault; the job took {took:.1f} s; "
          f"first peer error: {open(os.path.join(d, peers[0])).read().split(' ', 2)[2][:300]}")
    assert took < 60, f"the job took {took:.1f} s"


def _usage_task(it):
    import spark_collective

    comm = spark_collective.communicator()
    errors = {}

    def attempt(name, f):
        try:
            f()
            errors[name] = None
        except spark_collective.CollectiveUsageError as e:
            errors[name] = str(e)

    x = np.arange(20, dtype=np.float32)
    attempt("non-contiguous", lambda: comm.all_reduce(x[::2]))
    ro = np.arange(4, dtype=np.float64)
    ro.setflags(write=False)
    attempt("read-only", lambda: comm.all_reduce(ro))
    attempt("dtype", lambda: comm.all_reduce(np.arange(4, dtype=np.uint8)))
    attempt("not-an-array", lambda: comm.all_reduce([1.0, 2.0]))
    attempt("op", lambda: comm.all_reduce(np.ones(4, np.float32), op="median"))
    attempt("avg-int", lambda: comm.all_reduce(np.ones(4, np.int32), op="avg"))
    attempt("root", lambda: comm.broadcast(np.ones(4, np.float32), root=9))
    # The group is unharmed by usage errors: a real call still works.
    y = np.ones(8, dtype=np.int64)
    comm.all_reduce(y)
    yield comm.rank, errors, int(y[0])


def test_usage_errors_name_what_is_wrong_and_leave_the_group_usable(sc):
    rows = sc.parallelize(range(TASKS), TASKS).barrier().mapPartitions(_usage_task).collect()
    for rank, errors, y in rows:
        assert y == TASKS
        assert "not C-contiguous" in errors["non-contiguous"]
        assert "read-only" in errors["read-only"]
        assert "unsupported dtype |u1" in errors["dtype"]
        assert "numpy.ndarray, not list" in errors["not-an-array"]
        assert "unknown op 'median'" in errors["op"]
        assert "floating-point" in errors["avg-int"]
        assert "root 9 is not a rank" in errors["root"]


def _outside_barrier(it):
    import spark_collective
    try:
        spark_collective.communicator()
        yield None
    except spark_collective.CollectiveUsageError as e:
        yield str(e)


def _wrong_version(it):
    import spark_collective
    from spark_collective import _channel
    real = _channel.PLUGIN_VERSION
    _channel.PLUGIN_VERSION = "0.0.1"
    try:
        spark_collective.communicator()
        yield None
    except spark_collective.VersionMismatchError as e:
        yield str(e)
    finally:
        _channel.PLUGIN_VERSION = real  # the worker process is reused by later tasks


def test_calls_outside_a_barrier_task_and_version_mismatch_are_refused(sc):
    import spark_collective

    with pytest.raises(spark_collective.CollectiveUsageError, match="outside a Spark task"):
        spark_collective.communicator()
    msgs = sc.parallelize(range(2), 2).mapPartitions(_outside_barrier).collect()
    assert all(m and "needs a barrier stage" in m for m in msgs), msgs
    # A worker whose package claims another jar version than the executor's.
    msgs = sc.parallelize(range(2), 2).barrier().mapPartitions(_wrong_version).collect()
    assert all(m and "belongs to 0.0.1" in m and spark_collective.PLUGIN_VERSION in m for m in msgs), msgs


NO_PLUGIN = r"""
import sys
sys.path[:0] = {path!r}
import numpy as np
from pyspark import SparkContext
from conftest import spark_conf
sc = SparkContext(conf=spark_conf("local[2]", "no-plugin", plugin=False))
def f(it):
    import spark_collective
    try:
        spark_collective.communicator()
        yield "no error"
    except spark_collective.CollectiveUsageError as e:
        yield str(e)
print("RESULT", sc.parallelize(range(2), 2).barrier().mapPartitions(f).collect()[0])
sc.stop()
"""


def test_without_the_plugin_the_error_says_what_to_add():
    here = os.path.dirname(os.path.abspath(__file__))
    code = NO_PLUGIN.format(path=[here] + sys.path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT")]
    assert line, out.stdout + out.stderr
    assert "plugin is not running on this executor" in line[0] and "spark.plugins=" in line[0], line[0]
