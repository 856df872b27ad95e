package io.sparkcollective.examples.ml;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.spark.Barrier;
import io.sparkcollective.spark.Collective;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

/**
 * Data-parallel full-batch training over a cached RDD of shards (one per partition), with the gradient
 * summed in one of three ways. The optimizer and the data are the same, so the loss curves agree and only
 * the time differs.
 */
public final class Trainer {
  /** How the ranks' gradients are summed. */
  public enum Sync {
    /** Barrier stages of several iterations; gradients summed by this library's all-reduce. */
    ALL_REDUCE,
    /** One Spark job per iteration: broadcast the parameters, {@code treeAggregate} the gradients (MLlib). */
    TREE_AGGREGATE,
    /** Barrier stages; gradients Base64-encoded and exchanged with {@code BarrierTaskContext.allGather}. */
    ALL_GATHER
  }

  /** What one iteration measured. */
  public static final class Iteration implements Serializable {
    private static final long serialVersionUID = 1L;
    public final int index;
    public final double objective;
    public final double accuracy;
    /** Wall time of the iteration seen from the driver (stage launch shared out over its iterations). */
    public long wallNanos;
    /** Time spent summing gradients (waiting for the slowest rank included). */
    public final long syncNanos;

    Iteration(int index, double objective, double accuracy, long wallNanos, long syncNanos) {
      this.index = index;
      this.objective = objective;
      this.accuracy = accuracy;
      this.wallNanos = wallNanos;
      this.syncNanos = syncNanos;
    }
  }

  /** Parameters and momentum after a stage, with its iterations. */
  private static final class StageResult implements Serializable {
    private static final long serialVersionUID = 1L;
    final double[] w;
    final double[] velocity;
    final List<Iteration> iterations;

    StageResult(double[] w, double[] velocity, List<Iteration> iterations) {
      this.w = w;
      this.velocity = velocity;
      this.iterations = iterations;
    }
  }

  /** Sums every rank's buffer in place (a collective: every rank calls it). */
  private interface GradientSum {
    void sum(double[] buf);
  }

  private final JavaRDD<Shard> shards;
  private final Model model;
  private final Optimizer optimizer;
  private final long seed;

  public Trainer(JavaRDD<Shard> shards, Model model, Optimizer optimizer, long seed) {
    this.shards = shards;
    this.model = model;
    this.optimizer = optimizer;
    this.seed = seed;
  }

  /** The trained parameters and the iterations, in order. */
  public static final class Result {
    public final double[] w;
    public final List<Iteration> history;

    Result(double[] w, List<Iteration> history) {
      this.w = w;
      this.history = history;
    }
  }

  private double[] w;
  private double[] velocity;
  private int done;

  /** Back to the model's initial parameters, no momentum, no steps taken. */
  public void reset() {
    w = model.initialParameters(seed);
    velocity = new double[w.length];
    done = 0;
  }

  /** The current parameters (a copy). */
  public double[] parameters() {
    if (w == null) {
      reset();
    }
    return w.clone();
  }

  /**
   * Trains for {@code iterations} steps from the model's initial parameters; {@code perStage} iterations run
   * in one barrier stage (ignored by TREE_AGGREGATE, which runs one job per iteration). {@code progress}
   * sees every iteration as soon as the driver has it.
   */
  public Result train(Sync sync, int iterations, int perStage, Consumer<Iteration> progress) {
    reset();
    List<Iteration> history = new ArrayList<>();
    while (done < iterations) {
      for (Iteration it : stage(sync, Math.min(perStage, iterations - done))) {
        history.add(it);
        progress.accept(it);
      }
    }
    return new Result(w.clone(), history);
  }

  /**
   * Continues from the current parameters with one barrier stage of {@code steps} all-reduce steps: the
   * notebook pattern, one epoch per call. Returns the epoch's iterations.
   */
  public List<Iteration> epoch(int steps) {
    if (w == null) {
      reset();
    }
    return stage(Sync.ALL_REDUCE, steps);
  }

  /** One stage ({@code steps} iterations; one iteration per job for TREE_AGGREGATE). */
  private List<Iteration> stage(Sync sync, int steps) {
    int n = sync == Sync.TREE_AGGREGATE ? 1 : steps;
    long t0 = System.nanoTime();
    StageResult r = sync == Sync.TREE_AGGREGATE ? treeAggregateStep(w, velocity, done)
        : barrierStage(sync, w, velocity, done, n);
    long wall = System.nanoTime() - t0;
    for (Iteration it : r.iterations) {
      it.wallNanos = wall / r.iterations.size();
    }
    w = r.w;
    velocity = r.velocity;
    done += n;
    return r.iterations;
  }

  private StageResult barrierStage(Sync sync, double[] w0, double[] v0, int first, int count) {
    Model m = model;
    Optimizer opt = optimizer;
    List<StageResult> out = Barrier.mapPartitions(shards, it -> {
      Shard shard = it.next();
      GradientSum summer;
      int rank;
      if (sync == Sync.ALL_REDUCE) {
        Communicator comm = Collective.communicator();
        rank = comm.rank();
        summer = buf -> comm.allReduce(buf, ReduceOp.SUM);
      } else {
        BarrierTaskContext ctx = BarrierTaskContext.get();
        rank = ctx.partitionId();
        summer = buf -> allGatherSum(ctx, buf);
      }
      double[] w = w0.clone();
      double[] v = v0.clone();
      double[] buf = new double[w.length + 3];
      List<Iteration> iterations = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        long t0 = System.nanoTime();
        Optimizer.localSums(m, shard, w, buf);
        long t1 = System.nanoTime();
        summer.sum(buf);
        long t2 = System.nanoTime();
        double[] objectiveAndAccuracy = opt.step(m, w, v, buf);
        iterations.add(new Iteration(first + i + 1, objectiveAndAccuracy[0], objectiveAndAccuracy[1], 0, t2 - t1));
      }
      // Every rank holds the same parameters; rank 0 reports them.
      return rank == 0 ? Collections.singletonList(new StageResult(w, v, iterations)).iterator()
          : Collections.<StageResult>emptyIterator();
    }).collect();
    if (out.size() != 1) {
      throw new IllegalStateException("expected one stage result from rank 0, got " + out.size());
    }
    return out.get(0);
  }

  /** Gradient sync through Spark's own barrier all-gather of Base64 strings, summed in rank order. */
  private static void allGatherSum(BarrierTaskContext ctx, double[] buf) {
    ByteBuffer bytes = ByteBuffer.allocate(buf.length * 8);
    bytes.asDoubleBuffer().put(buf);
    String[] all = ctx.allGather(Base64.getEncoder().encodeToString(bytes.array()));
    java.util.Arrays.fill(buf, 0);
    for (String s : all) {
      java.nio.DoubleBuffer d = ByteBuffer.wrap(Base64.getDecoder().decode(s)).asDoubleBuffer();
      for (int i = 0; i < buf.length; i++) {
        buf[i] += d.get(i);
      }
    }
  }

  private StageResult treeAggregateStep(double[] w, double[] velocity, int done) {
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(shards.context());
    Broadcast<double[]> bw = sc.broadcast(w);
    Model m = model;
    int n = w.length;
    long t0 = System.nanoTime();
    // Slot n + 3 carries the slowest partition's compute time, so the sync time can be told apart.
    double[] summed = shards.treeAggregate(new double[n + 4], (acc, shard) -> {
      long c0 = System.nanoTime();
      double[] buf = new double[n + 3];
      Optimizer.localSums(m, shard, bw.value(), buf);
      for (int i = 0; i < n + 3; i++) {
        acc[i] += buf[i];
      }
      acc[n + 3] = Math.max(acc[n + 3], System.nanoTime() - c0);
      return acc;
    }, (a, b) -> {
      for (int i = 0; i < n + 3; i++) {
        a[i] += b[i];
      }
      a[n + 3] = Math.max(a[n + 3], b[n + 3]);
      return a;
    }, 2);
    long elapsed = System.nanoTime() - t0;
    bw.destroy();
    double[] nextW = w.clone();
    double[] nextV = velocity.clone();
    double[] objectiveAndAccuracy = optimizer.step(model, nextW, nextV, summed);
    long sync = Math.max(0, elapsed - (long) summed[n + 3]);
    return new StageResult(nextW, nextV, Collections.singletonList(
        new Iteration(done + 1, objectiveAndAccuracy[0], objectiveAndAccuracy[1], 0, sync)));
  }
}
