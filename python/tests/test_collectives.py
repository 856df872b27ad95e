"""Python barrier tasks on real executor JVMs: results against NumPy for every dtype, op and several shapes."""

import numpy as np
import pytest

TASKS = 4
DTYPES = ["float32", "float64", "float16", "int32", "int64"]
OPS = ["sum", "avg", "min", "max", "prod"]
SHAPES = [(1,), (1000,), (37, 11), (3, 4, 1025)]


def seeded(seed: int, rank: int, shape, dtype: str, op: str) -> np.ndarray:
    """Rank ``rank``'s input, from a seed: small integers (exact in every type) or values near one (prod)."""
    rng = np.random.default_rng([seed, rank])
    if op == "prod":
        v = rng.integers(1, 3, size=shape) if dtype.startswith("int") else rng.uniform(0.5, 1.5, size=shape)
    elif dtype.startswith("int"):
        v = rng.integers(-1000, 1000, size=shape)
    else:
        v = rng.standard_normal(size=shape) * 10
    return np.ascontiguousarray(v.astype(dtype))


def reference(inputs, dtype: str, op: str) -> np.ndarray:
    """What the group must compute, in float64 (floats) or exactly (integers)."""
    wide = [x.astype(np.float64) if not dtype.startswith("int") else x.astype(np.int64) for x in inputs]
    if op == "sum":
        r = sum(wide[1:], wide[0].copy())
    elif op == "avg":
        r = sum(wide[1:], wide[0].copy()) / len(wide)
    elif op == "min":
        r = np.minimum.reduce(wide)
    elif op == "max":
        r = np.maximum.reduce(wide)
    else:
        r = np.multiply.reduce(wide)
    return r


def check(got: np.ndarray, inputs, dtype: str, op: str, what: str) -> None:
    ref = reference(inputs, dtype, op)
    assert got.dtype == np.dtype(dtype) and got.shape == inputs[0].shape, what
    if dtype.startswith("int") or op in ("min", "max"):
        np.testing.assert_array_equal(got, ref.astype(dtype), err_msg=what)
        return
    # Floats: sums in the element type in the algorithm's order (float16: in float32, each partial sum rounded to
    # float16 where it is sent on, up to size - 1 roundings and one at the end).
    eps = {"float16": 2.0 ** -10, "float32": 2.0 ** -23, "float64": 2.0 ** -52}[dtype]
    scale = sum(np.abs(x.astype(np.float64)) for x in inputs) if op != "prod" else np.abs(ref)
    if op == "avg":
        scale = scale / len(inputs)
    tol = (len(inputs) + 1) * eps * scale + (6e-8 if dtype == "float16" else 0)
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= tol), f"{what}: max error {err.max()} beyond {tol.flat[np.argmax(err - tol)]}"


def _all_reduce_task(it):
    import spark_collective

    comm = spark_collective.communicator()
    out = []
    for di, dtype in enumerate(DTYPES):
        for oi, op in enumerate(OPS):
            if op == "avg" and dtype.startswith("int"):
                continue
            for si, shape in enumerate(SHAPES):
                x = seeded(100 * di + 10 * oi + si, comm.rank, shape, dtype, op)
                if (di + oi + si + comm.rank) % 2 == 0:
                    # Half the ranks of each case hold the array in shared memory (used in place), the others
                    # in their own memory (staged): one group mixes both.
                    shared = comm.empty(shape, dtype)
                    shared[...] = x
                    x = shared
                y = comm.all_reduce(x, op)
                assert y is x
                out.append((dtype, op, si, np.array(x)))
    yield comm.rank, comm.size, out


def test_all_reduce_matches_numpy_for_every_dtype_op_and_shape(sc):
    results = sorted(sc.parallelize(range(TASKS), TASKS).barrier().mapPartitions(_all_reduce_task).collect(),
                     key=lambda r: r[0])
    assert [r[0] for r in results] == list(range(TASKS)) and all(r[1] == TASKS for r in results)
    per_rank = [r[2] for r in results]
    cases = 0
    for k, (dtype, op, si, got) in enumerate(per_rank[0]):
        di, oi = DTYPES.index(dtype), OPS.index(op)
        inputs = [seeded(100 * di + 10 * oi + si, r, SHAPES[si], dtype, op) for r in range(TASKS)]
        check(got, inputs, dtype, op, f"{dtype} {op} {SHAPES[si]}")
        for r in range(1, TASKS):
            assert per_rank[r][k][3].tobytes() == got.tobytes(), f"rank {r} differs from rank 0: {dtype} {op}"
        cases += 1
    assert cases == (len(DTYPES) * len(OPS) - 2) * len(SHAPES)


def _other_collectives_task(it):
    import spark_collective

    comm = spark_collective.communicator()
    r = comm.rank
    rs_in = seeded(7, r, (1001,), "float64", "sum")
    block = comm.reduce_scatter(rs_in.copy(), "sum").copy()
    gathered = comm.all_gather(np.arange(5, dtype=np.int64) + 10 * r)
    out = np.empty((comm.size, 2, 3), dtype=np.float32)
    comm.all_gather(np.full((2, 3), r, dtype=np.float32), out=out)
    b = np.arange(12, dtype=np.int32).reshape(3, 4) * (r + 1)
    comm.broadcast(b, root=2)
    comm.barrier()
    bf = seeded(8, r, (4096,), "float32", "sum")
    comm.all_reduce(bf, wire="bf16")
    # float16 in its own 16 bits (the default) and in the exact mode (float32 on the wire, rounded once).
    half = halves(r)
    exact_half = half.copy()
    comm.all_reduce(half)
    comm.all_reduce(exact_half, wire="f32")
    try:
        comm.all_reduce(np.zeros(4, np.float32), wire="f32")
        misuse = None
    except spark_collective.CollectiveUsageError as e:
        misuse = str(e)
    yield r, block, gathered, out, b, bf, half, exact_half, misuse


def halves(rank: int) -> np.ndarray:
    """Multiples of 1/8 below 125 in magnitude: exact in float16, and so are sums of four of them in float32."""
    return (np.random.default_rng([9, rank]).integers(-1000, 1000, size=1 << 18) / 8).astype(np.float16)


def test_reduce_scatter_all_gather_broadcast_barrier_and_bf16_wire(sc):
    results = sorted(sc.parallelize(range(TASKS), TASKS).barrier().mapPartitions(_other_collectives_task).collect(),
                     key=lambda x: x[0])
    full = reference([seeded(7, r, (1001,), "float64", "sum") for r in range(TASKS)], "float64", "sum")
    bounds = np.cumsum([0] + [1001 // TASKS + (1 if i < 1001 % TASKS else 0) for i in range(TASKS)])
    for r, block, gathered, out, b, bf, _, _, _ in results:
        np.testing.assert_allclose(block, full[bounds[r]:bounds[r + 1]], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(gathered, np.stack([np.arange(5) + 10 * k for k in range(TASKS)]))
        np.testing.assert_array_equal(out, np.stack([np.full((2, 3), k, np.float32) for k in range(TASKS)]))
        np.testing.assert_array_equal(b, np.arange(12, dtype=np.int32).reshape(3, 4) * 3)
    exact = reference([seeded(8, r, (4096,), "float32", "sum") for r in range(TASKS)], "float32", "sum")
    bf0 = results[0][5]
    # bfloat16 on the wire: 8 bits of mantissa per hop; within a few bf16 ulps of the float32 sum.
    scale = sum(np.abs(seeded(8, r, (4096,), "float32", "sum").astype(np.float64)) for r in range(TASKS))
    assert np.all(np.abs(bf0 - exact) <= 4 * 2.0 ** -8 * scale)
    assert not np.array_equal(bf0, exact.astype(np.float32)), "bf16 wire left the float32 sum exact"
    for r in range(1, TASKS):
        assert results[r][5].tobytes() == bf0.tobytes()
    inputs = [halves(r).astype(np.float64) for r in range(TASKS)]
    total = sum(inputs[1:], inputs[0].copy())
    magnitude = sum(np.abs(x) for x in inputs)
    u = 2.0 ** -11
    for r, *_, half, exact_half, misuse in results:
        np.testing.assert_array_equal(exact_half, total.astype(np.float16), err_msg=f"rank {r}: exact mode")
        err = np.abs(half.astype(np.float64) - total)
        assert np.all(err <= (TASKS - 1) * u * magnitude + u * np.abs(total)), f"rank {r}: float16 wire {err.max()}"
        assert half.tobytes() == results[0][6].tobytes(), f"rank {r} differs from rank 0 (float16 wire)"
        assert "wire='f32' (the exact mode) is for float16 arrays, not float32" in misuse, misuse


def _shared_memory_task(it):
    import gc

    import spark_collective

    comm = spark_collective.communicator()
    r = comm.rank
    g = comm.zeros((3, 1000), np.float32)
    assert g.shape == (3, 1000) and g.dtype == np.float32 and g.flags.c_contiguous and not g.any()
    g[...] = seeded(9, r, (3, 1000), "float32", "sum")
    comm.all_reduce(g)
    part = g[1]  # a contiguous view of an array in shared memory is used in place too
    part[...] = r + 1
    comm.all_reduce(part, "max")
    d = comm.empty(1001, np.float64)
    d[...] = seeded(7, r, (1001,), "float64", "sum")
    block = comm.reduce_scatter(d).copy()
    src = comm.empty((2, 3), np.int64)
    src[...] = 10 * r + np.arange(6).reshape(2, 3)
    gathered = comm.all_gather(src, out=comm.empty((comm.size, 2, 3), np.int64))
    b = comm.empty(4, np.int32)
    b[...] = r
    comm.broadcast(b, root=3)
    staged = comm._channel._segment is not None  # nothing so far needed the staging segment
    owned = len(comm._channel._owned)
    result = (r, np.array(g), block, np.array(gathered), np.array(b), staged, owned)
    del g, part, d, src, gathered, b
    gc.collect()
    x = np.ones(10, np.float32)
    comm.all_reduce(x)  # tells the executor to let go of the dropped segments first
    with pytest.raises(spark_collective.CollectiveUsageError, match="unsupported dtype <u2"):
        comm.empty(3, np.uint16)
    yield result + (len(comm._channel._owned), len(comm._channel._dropped), float(x[0]))


def test_arrays_in_shared_memory_are_used_in_place_and_released_when_dropped(sc):
    results = sorted(sc.parallelize(range(TASKS), TASKS).barrier().mapPartitions(_shared_memory_task).collect(),
                     key=lambda x: x[0])
    sums = reference([seeded(9, r, (3, 1000), "float32", "sum") for r in range(TASKS)], "float32", "sum")
    full = reference([seeded(7, r, (1001,), "float64", "sum") for r in range(TASKS)], "float64", "sum")
    bounds = np.cumsum([0] + [1001 // TASKS + (1 if i < 1001 % TASKS else 0) for i in range(TASKS)])
    for r, g, block, gathered, b, staged, owned, owned_after, dropped_after, ones in results:
        np.testing.assert_allclose(g[0], sums[0], rtol=1e-6, atol=1e-4)
        np.testing.assert_allclose(g[2], sums[2], rtol=1e-6, atol=1e-4)
        np.testing.assert_array_equal(g[1], np.full(1000, TASKS, np.float32))
        assert g.tobytes() == results[0][1].tobytes(), f"rank {r} differs from rank 0"
        np.testing.assert_allclose(block, full[bounds[r]:bounds[r + 1]], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(gathered, np.stack([10 * k + np.arange(6).reshape(2, 3) for k in range(TASKS)]))
        np.testing.assert_array_equal(b, np.full(4, 3, np.int32))
        assert not staged, f"rank {r} staged an array that lives in shared memory"
        assert owned == 5 and owned_after == 0 and dropped_after == 0, (owned, owned_after, dropped_after)
        assert ones == TASKS


def _stage_task(stage):
    def task(it):
        import spark_collective

        comm = spark_collective.communicator()
        x = np.full(1000, stage + comm.rank, dtype=np.float32)
        comm.all_reduce(x)
        yield comm.rank, comm.group, float(x[0]), float(x[-1])
    return task


def test_ten_successive_stages_each_form_a_new_group(sc):
    groups = set()
    for stage in range(10):
        rows = sc.parallelize(range(TASKS), TASKS).barrier().mapPartitions(_stage_task(stage)).collect()
        expected = float(sum(stage + r for r in range(TASKS)))
        assert sorted(r[0] for r in rows) == list(range(TASKS))
        assert all(r[2] == expected and r[3] == expected for r in rows), rows
        assert len({r[1] for r in rows}) == 1
        groups.add(rows[0][1])
    assert len(groups) == 10


def _frame_task(batches):
    """A mapInPandas / mapInArrow function: each barrier task sums its column's values across the group."""
    import spark_collective

    comm = spark_collective.communicator()
    for batch in batches:
        import pyarrow as pa

        values = batch.column("v").to_numpy() if isinstance(batch, pa.RecordBatch) else batch["v"].to_numpy()
        total = np.array([values.sum()], dtype=np.float64)
        comm.all_reduce(total)
        rows = {"rank": [comm.rank], "size": [comm.size], "total": [float(total[0])]}
        if isinstance(batch, pa.RecordBatch):
            yield pa.RecordBatch.from_pydict(rows, schema=pa.schema([("rank", pa.int32()), ("size", pa.int32()),
                                                                     ("total", pa.float64())]))
        else:
            import pandas as pd

            yield pd.DataFrame(rows)


@pytest.mark.parametrize("api", ["mapInPandas", "mapInArrow"])
def test_dataframe_barrier_udfs_reach_the_communicator(sc, api):
    from pyspark.sql import SparkSession

    spark = SparkSession(sc)
    df = spark.range(0, 400, numPartitions=TASKS).selectExpr("cast(id as double) as v")
    schema = "rank int, size int, total double"
    mapped = getattr(df, api)(_frame_task, schema, barrier=True)
    rows = sorted((r["rank"], r["size"], r["total"]) for r in mapped.collect())
    # One batch per partition here (100 rows, below the Arrow batch size): one all-reduce per task.
    assert rows == [(r, TASKS, float(sum(range(400)))) for r in range(TASKS)], rows
