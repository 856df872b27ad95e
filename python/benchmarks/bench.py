"""Gradient sync from PySpark barrier tasks: spark_collective's all_reduce against a Java task's all-reduce in
the same run (same cluster, same sizes), and against what PySpark users do today: ``treeAggregate`` and
``BarrierTaskContext.allGather``.

Run by ``python/run-bench.sh``; writes ``python/target/bench/report.md``. Times are the slowest rank's per
call (each call after a barrier), medians over the repetitions; treeAggregate is timed on the driver.
"""

import argparse
import base64
import glob
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

from conftest import plugin_jar, spark_conf  # noqa: E402


def python_all_reduce(sc, tasks, n, warmup, reps, shared=False, wire=None):
    """``shared``: the gradient is an array made by ``comm.empty`` (used in place, no copies), else NumPy's own;
    ``wire``: all_reduce's wire argument (``"bf16"``: float32 sent as bfloat16)."""
    def task(it):
        import spark_collective

        comm = spark_collective.communicator()
        x = comm.empty(n, np.float32) if shared else np.empty(n, dtype=np.float32)
        times = []
        for i in range(warmup + reps):
            x.fill(comm.rank + 1)
            comm.barrier()
            t0 = time.perf_counter()
            comm.all_reduce(x, wire=wire)
            dt = time.perf_counter() - t0
            if i >= warmup:
                times.append(dt * 1e3)
        expected = tasks * (tasks + 1) / 2
        if not np.all(x == expected):
            raise AssertionError(f"wrong sum: {x[:4]} instead of {expected}")
        yield times
    rows = sc.parallelize(range(tasks), tasks).barrier().mapPartitions(task).collect()
    return [max(r[i] for r in rows) for i in range(reps)]


def python_loop(sc, tasks, n, warm, calls, rounds, shared=False):
    """Microseconds per call in loops of ``calls`` back-to-back all-reduces, per round: the slowest rank's
    wall time, and the Python worker's own CPU time (user and system, so its system calls and the wake-ups
    they make too; the median rank's); then the slowest rank's median call over all rounds (every call timed
    on its own: the typical call, without the few that wait for a core, which the loop means carry). A first,
    untimed round of ``warm`` calls lets the executors' JIT settle after other stages ran other types (a Java
    task's heap arrays) through the same code."""
    def task(it):
        import spark_collective

        comm = spark_collective.communicator()
        x = comm.zeros(n, np.float32) if shared else np.zeros(n, dtype=np.float32)
        out = []
        each = []
        clock = time.perf_counter
        for r in range(-1, rounds):
            comm.barrier()
            c0 = time.process_time()
            t0 = t = clock()
            for _ in range(calls if r >= 0 else warm):
                comm.all_reduce(x)
                now = clock()
                if r >= 0:
                    each.append(now - t)
                t = now
            if r >= 0:
                out.append(((t - t0) * 1e6 / calls, (time.process_time() - c0) * 1e6 / calls))
        yield out, statistics.median(each) * 1e6 if each else 0.0
    rows = sc.parallelize(range(tasks), tasks).barrier().mapPartitions(task).collect()
    return ([max(r[0][i][0] for r in rows) for i in range(rounds)],
            [statistics.median(r[0][i][1] for r in rows) for i in range(rounds)],
            max(r[1] for r in rows))


def java_loop(sc, tasks, n, warm, calls, rounds):
    """As :func:`python_loop` for a Java task: the slowest rank's loop time per call in each round, and its
    median call."""
    bench = sc._jvm.io.sparkcollective.benchmarks.SparkSyncBenchmark
    us = list(bench.javaAllReduceLoopMicros(sc._jsc, tasks, n, warm, calls, rounds))
    return us[:rounds], us[rounds]


def java_all_reduce(sc, tasks, n, warmup, reps):
    bench = sc._jvm.io.sparkcollective.benchmarks.SparkSyncBenchmark
    return list(bench.javaAllReduceMillis(sc._jsc, tasks, n, warmup, reps))


def tree_aggregate(sc, tasks, n, reps):
    rdd = sc.parallelize(range(tasks), tasks)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        total = rdd.treeAggregate(np.zeros(n, dtype=np.float32),
                                  lambda acc, p: acc + np.full(n, p + 1, dtype=np.float32),
                                  lambda a, b: a + b, depth=2)
        times.append((time.perf_counter() - t0) * 1e3)
        assert total[0] == tasks * (tasks + 1) / 2
    return times


def all_gather(sc, tasks, n, reps):
    def task(it):
        from pyspark import BarrierTaskContext

        ctx = BarrierTaskContext.get()
        x = np.full(n, ctx.partitionId() + 1, dtype=np.float32)
        times = []
        for _ in range(reps):
            ctx.barrier()
            t0 = time.perf_counter()
            parts = ctx.allGather(base64.b64encode(x.tobytes()).decode("ascii"))
            total = sum(np.frombuffer(base64.b64decode(p), dtype=np.float32) for p in parts)
            times.append((time.perf_counter() - t0) * 1e3)
        assert total[0] == tasks * (tasks + 1) / 2
        yield times
    rows = sc.parallelize(range(tasks), tasks).barrier().mapPartitions(task).collect()
    return [max(r[i] for r in rows) for i in range(reps)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,1000000,10000000", help="floats per gradient, comma-separated")
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--master", default="local-cluster[2,2,1024]")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--staged-kernels", action="store_true",
                    help="executors combine vectors outside the heap through scratch arrays (a baseline)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--tree-reps", type=int, default=5)
    ap.add_argument("--gather-reps", type=int, default=3)
    ap.add_argument("--gather-max", type=int, default=1000000, help="largest size for allGather")
    ap.add_argument("--loop-calls", type=int, default=200, help="calls per back-to-back loop (overhead figure)")
    ap.add_argument("--loop-rounds", type=int, default=5)
    ap.add_argument("--loop-warm-calls", type=int, default=10000,
                    help="untimed calls at the start of each back-to-back loop's stage (the JIT recompiles what the "
                         "stage before it, of another path, made it compile for other types)")
    ap.add_argument("--loop-size", type=int, default=1000, help="floats per call in the back-to-back loops")
    ap.add_argument("--warm-calls", type=int, default=20000,
                    help="untimed back-to-back calls of each path before any timing (the executors' JIT compiles "
                         "the call path over the first ten thousand calls or so, and meanwhile its compiler "
                         "threads take cores from the ranks)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for the run, e.g. spark.collective.transport.spinMicros=50 (repeatable)")
    ap.add_argument("--bf16", action="store_true",
                    help="also time all_reduce(x, wire='bf16') on comm.empty arrays, against float32 on the wire")
    ap.add_argument("--out", default=os.path.join(ROOT, "python", "target", "bench"))
    args = ap.parse_args()
    from pyspark import SparkContext

    bench_jar = os.path.join(ROOT, "benchmarks", "target", "benchmarks.jar")
    if not os.path.exists(bench_jar):
        sys.exit("build first: mvn -B -q -DskipTests package (benchmarks/target/benchmarks.jar is missing)")
    jars = f"{plugin_jar()},{bench_jar}"
    conf = (spark_conf(args.master, "spark-collective-python-bench").set("spark.jars", jars)
            .set("spark.driver.extraClassPath", jars.replace(",", os.pathsep))
            .set("spark.executor.memory", "1g").set("spark.driver.memory", "2g"))
    # The benchmarks jar carries slf4j's simple logger for its own command lines: keep the driver's log at WARN.
    conf.set("spark.driver.extraJavaOptions",
             conf.get("spark.driver.extraJavaOptions") + " -Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
    if args.staged_kernels:
        # The same-run baseline of the engine's in-place kernels for vectors outside the heap (benchmarks/README.md
        # "Vectors in direct buffers"): the executors combine such vectors through scratch arrays instead.
        conf.set("spark.executor.extraJavaOptions",
                 (conf.get("spark.executor.extraJavaOptions", "") or "") + " -Dio.sparkcollective.kernels.staged=true")
    for kv in args.conf:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            sys.exit(f"--conf {kv}: expected KEY=VALUE")
        conf.set(key, value)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("WARN")
    sc.parallelize(range(8), 8).count()
    if args.warm_calls > 0:
        java_loop(sc, args.tasks, args.loop_size, args.warm_calls, 0, 0)
        python_loop(sc, args.tasks, args.loop_size, args.warm_calls, 0, 0)
        python_loop(sc, args.tasks, args.loop_size, args.warm_calls, 0, 0, shared=True)
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        row = {"floats": n}
        # Interleaved so that all see the same machine: Java, Python, Python in shared memory, twice.
        j, p, s, b = [], [], [], []
        for _ in range(2):
            j += java_all_reduce(sc, args.tasks, n, args.warmup, args.reps)
            p += python_all_reduce(sc, args.tasks, n, args.warmup, args.reps)
            s += python_all_reduce(sc, args.tasks, n, args.warmup, args.reps, shared=True)
            if args.bf16:
                b += python_all_reduce(sc, args.tasks, n, args.warmup, args.reps, shared=True, wire="bf16")
        row["bf16"] = statistics.median(b) if b else None
        row["java"] = statistics.median(j)
        row["python"] = statistics.median(p)
        row["shared"] = statistics.median(s)
        row["tree"] = statistics.median(tree_aggregate(sc, args.tasks, n, args.tree_reps))
        row["gather"] = (statistics.median(all_gather(sc, args.tasks, n, args.gather_reps))
                         if n <= args.gather_max else None)
        rows.append(row)
        print(f"{n:>10} floats: Java {row['java']:.3f} ms, Python {row['python']:.3f} ms "
              f"({row['python'] / row['java']:.2f}x, +{(row['python'] - row['java']) * 1e3:.0f} us), "
              f"Python in shared memory {row['shared']:.3f} ms ({row['shared'] / row['java']:.2f}x), "
              f"treeAggregate {row['tree']:.1f} ms, allGather "
              + (f"{row['gather']:.1f} ms" if row["gather"] is not None else "not run")
              + (f", bfloat16 wire in shared memory {row['bf16']:.3f} ms ({row['bf16'] / row['shared']:.2f}x float32's)"
                 if row["bf16"] is not None else ""), flush=True)
    loop = {"java": [], "python": [], "shared": [], "python_cpu": [], "shared_cpu": [],
            "java_call": [], "python_call": [], "shared_call": []}
    if args.loop_calls > 0:
        for _ in range(2):
            wall, call = java_loop(sc, args.tasks, args.loop_size, args.loop_warm_calls, args.loop_calls,
                                   args.loop_rounds)
            loop["java"] += wall
            loop["java_call"].append(call)
            for key, shared in (("python", False), ("shared", True)):
                wall, cpu, call = python_loop(sc, args.tasks, args.loop_size, args.loop_warm_calls, args.loop_calls,
                                              args.loop_rounds, shared)
                loop[key] += wall
                loop[key + "_cpu"] += cpu
                loop[key + "_call"].append(call)
        loop = {k: statistics.median(v) for k, v in loop.items()}
        print(f"back-to-back, {args.loop_size} floats: Java {loop['java']:.1f} us per call, Python "
              f"{loop['python']:.1f} (+{loop['python'] - loop['java']:.1f}), in shared memory {loop['shared']:.1f} "
              f"(+{loop['shared'] - loop['java']:.1f}); the Python worker's CPU per call {loop['python_cpu']:.1f} "
              f"and {loop['shared_cpu']:.1f}; median call: Java {loop['java_call']:.1f} us, Python "
              f"{loop['python_call']:.1f} (+{loop['python_call'] - loop['java_call']:.1f}), in shared memory "
              f"{loop['shared_call']:.1f} (+{loop['shared_call'] - loop['java_call']:.1f})", flush=True)
    sc.stop()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(f"Gradient sync of float32 arrays across {args.tasks} PySpark barrier tasks on {args.master}: "
                "milliseconds per call, median (slowest rank per call)"
                + (f", after {args.warm_calls} untimed calls of each path" if args.warm_calls > 0 else "") + "."
                + (f" Settings: {', '.join(args.conf)}." if args.conf else "") + "\n\n")
        f.write("| floats | Java allReduce | Python all_reduce | Python / Java | Python, array in shared memory "
                "(comm.empty) | shared / Java | treeAggregate (Python) | allGather (Python, Base64) | "
                "treeAggregate / Python |\n")
        f.write("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
        for r in rows:
            g = f"{r['gather']:.1f}" if r["gather"] is not None else "not run"
            f.write(f"| {r['floats']} | {r['java']:.3f} | {r['python']:.3f} | {r['python'] / r['java']:.2f}x | "
                    f"{r['shared']:.3f} | {r['shared'] / r['java']:.2f}x | {r['tree']:.1f} | {g} | "
                    f"{r['tree'] / r['python']:.1f}x |\n")
        if args.bf16:
            f.write("\nThe bfloat16 wire from Python (`all_reduce(x, wire='bf16')` on `comm.empty` arrays), against "
                    "float32 on the wire in the same run:\n\n"
                    "| floats | float32 wire | bfloat16 wire | bfloat16 / float32 |\n|---:|---:|---:|---:|\n")
            for r in rows:
                f.write(f"| {r['floats']} | {r['shared']:.3f} | {r['bf16']:.3f} | {r['bf16'] / r['shared']:.2f}x |\n")
        if args.loop_calls > 0:
            f.write(f"\nBack-to-back loops of {args.loop_calls} all-reduces of {args.loop_size} floats (no barrier "
                    "between calls), microseconds per call: the loop's time per call, median of rounds (slowest "
                    "rank), and the median call (every call timed on its own; slowest rank, median of the two "
                    "stages of each path):\n\n"
                    "| | Java | Python | Python - Java | Python in shared memory | shared - Java | Python worker CPU "
                    "(NumPy array) | Python worker CPU (shared) |\n"
                    "|---|---:|---:|---:|---:|---:|---:|---:|\n"
                    f"| loop | {loop['java']:.1f} | {loop['python']:.1f} | {loop['python'] - loop['java']:.1f} | "
                    f"{loop['shared']:.1f} | {loop['shared'] - loop['java']:.1f} | {loop['python_cpu']:.1f} | "
                    f"{loop['shared_cpu']:.1f} |\n"
                    f"| median call | {loop['java_call']:.1f} | {loop['python_call']:.1f} | "
                    f"{loop['python_call'] - loop['java_call']:.1f} | {loop['shared_call']:.1f} | "
                    f"{loop['shared_call'] - loop['java_call']:.1f} | | |\n")
    print("report:", os.path.join(args.out, "report.md"))


if __name__ == "__main__":
    main()
