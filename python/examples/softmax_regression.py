"""Softmax regression trained with PySpark barrier stages, gradients summed by spark_collective's all_reduce;
then the same model, data and optimizer synced the MLlib way (treeAggregate + broadcast), timed side by side.

    python softmax_regression.py --master 'local-cluster[2,2,1024]' --iterations 60

Prints a progress line every 10 iterations and a summary; writes loss.png and time-per-iteration.png to
--out. Both ways use full-batch gradient descent with Nesterov momentum on the mean cross-entropy plus
(lambda/2)|W|^2 (no penalty on the intercepts), so their loss curves coincide and only the time differs.
"""

import argparse
import os
import sys
import time
from typing import List, Tuple

import numpy as np


# ------------------------------------------------------------------------------------------------ the model

def shard(seed: int, partition: int, rows: int, features: int, classes: int) -> Tuple[np.ndarray, np.ndarray]:
    """Partition ``partition``'s rows: features from a seed, labels drawn from a fixed true softmax model."""
    truth = np.random.default_rng([seed, 0]).normal(size=(features + 1, classes))
    rng = np.random.default_rng([seed, partition + 1])
    x = np.hstack([rng.normal(size=(rows, features)), np.ones((rows, 1))])
    logits = x @ truth
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((rows, 1))).argmax(axis=1)
    return x, y


def local_sums(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """This partition's part: gradient sums (one per parameter), the loss sum and the row count."""
    logits = x @ w
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(len(y)), y] + 1e-300).sum()
    p[np.arange(len(y)), y] -= 1
    grad = x.T @ p
    return np.concatenate([grad.ravel(), [loss, len(y)]])


def step(w: np.ndarray, velocity: np.ndarray, summed: np.ndarray, lr: float, momentum: float,
         lam: float) -> float:
    """One Nesterov step from the summed buffer (in place); returns the objective at w before the step."""
    n = w.size
    rows = summed[n + 1]
    g = summed[:n].reshape(w.shape) / rows
    g[:-1] += lam * w[:-1]  # the intercept row is not penalised
    penalty = float((w[:-1] ** 2).sum())
    v_prev = velocity.copy()
    velocity *= momentum
    velocity -= lr * g
    w += -momentum * v_prev + (1 + momentum) * velocity
    return float(summed[n] / rows + 0.5 * lam * penalty)


# ----------------------------------------------------------------------------------------- the two syncs

def train_all_reduce(sc, args) -> Tuple[List[float], List[float]]:
    """Barrier stages of ``per_stage`` steps each; every task keeps the parameters, all ranks step alike."""
    shape = (args.features + 1, args.classes)
    w = np.zeros(shape)
    velocity = np.zeros(shape)
    losses: List[float] = []
    times: List[float] = []
    done = 0
    while done < args.iterations:
        steps = min(args.per_stage, args.iterations - done)
        a = args

        def stage(it, w0=w, v0=velocity, steps=steps):
            import spark_collective
            from pyspark import TaskContext

            x, y = shard(a.seed, TaskContext.get().partitionId(), a.rows // a.partitions, a.features, a.classes)
            comm = spark_collective.communicator()
            wl, vl = w0.copy(), v0.copy()
            out = []
            for _ in range(steps):
                buf = local_sums(x, y, wl)
                comm.all_reduce(buf)
                out.append(step(wl, vl, buf, a.lr, a.momentum, a.lam))
            if comm.rank == 0:
                yield wl, vl, out

        t0 = time.perf_counter()
        w, velocity, stage_losses = (sc.parallelize(range(args.partitions), args.partitions).barrier()
                                     .mapPartitions(stage).collect()[0])
        per = (time.perf_counter() - t0) / steps
        for loss in stage_losses:
            losses.append(loss)
            times.append(per * 1e3)
            progress("allReduce", len(losses), loss, per)
        done += steps
    return losses, times


def train_tree_aggregate(sc, args) -> Tuple[List[float], List[float]]:
    """The driver keeps the parameters; each step broadcasts them and treeAggregates the gradient."""
    a = args
    data = (sc.parallelize(range(args.partitions), args.partitions)
            .map(lambda p: shard(a.seed, p, a.rows // a.partitions, a.features, a.classes)).cache())
    data.count()
    shape = (args.features + 1, args.classes)
    w = np.zeros(shape)
    velocity = np.zeros(shape)
    losses: List[float] = []
    times: List[float] = []
    zero = np.zeros(w.size + 2)
    for i in range(args.iterations):
        t0 = time.perf_counter()
        bw = sc.broadcast(w)
        summed = data.treeAggregate(zero, lambda acc, xy: acc + local_sums(xy[0], xy[1], bw.value),
                                    lambda p, q: p + q, depth=2)
        losses.append(step(w, velocity, summed, a.lr, a.momentum, a.lam))
        bw.destroy()
        times.append((time.perf_counter() - t0) * 1e3)
        progress("treeAggregate", i + 1, losses[-1], times[-1] / 1e3)
    data.unpersist()
    return losses, times


def progress(how: str, i: int, loss: float, seconds: float) -> None:
    if i % 10 == 0 or i == 1:
        print(f"{how:>13} iteration {i:4d}: loss {loss:.6f}, {seconds * 1e3:8.1f} ms per iteration", flush=True)


def charts(out: str, curves) -> List[str]:
    """loss.png and time-per-iteration.png for {name: (losses, times)}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out, exist_ok=True)
    paths = []
    for name, index, label, log in (("loss", 0, "training objective", False),
                                    ("time-per-iteration", 1, "milliseconds per iteration", True)):
        fig, ax = plt.subplots(figsize=(7, 4))
        for how, series in curves.items():
            ax.plot(range(1, len(series[index]) + 1), series[index], label=how)
        ax.set_xlabel("iteration")
        ax.set_ylabel(label)
        if log:
            ax.set_yscale("log")
        ax.legend()
        ax.grid(alpha=0.3)
        path = os.path.join(out, name + ".png")
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths


def parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--master", default="local-cluster[2,2,1024]")
    ap.add_argument("--rows", type=int, default=40000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--per-stage", type=int, default=20, help="allReduce steps per barrier stage")
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=os.path.join("target", "training"))
    return ap.parse_args(argv)


def run(sc, args) -> dict:
    """Trains both ways on ``sc``; returns {name: (losses, times)} and writes the charts."""
    curves = {"allReduce": train_all_reduce(sc, args), "treeAggregate + broadcast": train_tree_aggregate(sc, args)}
    a, t = curves["allReduce"], curves["treeAggregate + broadcast"]
    print(f"final objective: allReduce {a[0][-1]:.6f}, treeAggregate {t[0][-1]:.6f} "
          f"(max difference over the run {max(abs(p - q) for p, q in zip(a[0], t[0])):.2e}); median time per "
          f"iteration: allReduce {np.median(a[1]):.1f} ms, treeAggregate + broadcast {np.median(t[1]):.1f} ms "
          f"({np.median(t[1]) / np.median(a[1]):.1f}x)")
    for p in charts(args.out, curves):
        print("chart:", p)
    return curves


def main(argv=None) -> None:
    args = parse(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(os.path.dirname(here), "tests"))
    from conftest import spark_conf  # the plugin jar and, on local-cluster, PySpark's testing mode

    from pyspark import SparkContext

    sc = SparkContext(conf=spark_conf(args.master, "softmax-regression-python"))
    sc.setLogLevel("WARN")
    try:
        run(sc, args)
    finally:
        sc.stop()


if __name__ == "__main__":
    main()
