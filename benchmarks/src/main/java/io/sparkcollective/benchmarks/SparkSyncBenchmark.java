package io.sparkcollective.benchmarks;

import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.examples.TrainingJob;
import io.sparkcollective.examples.report.LineChart;
import io.sparkcollective.spark.Barrier;
import io.sparkcollective.spark.Collective;
import java.io.Serializable;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

/**
 * Gradient sync inside Spark, the way Spark users do it today against this plugin: the same float32 gradient
 * summed across the tasks of a barrier stage by (a) {@code allReduce}, (b) {@code RDD.treeAggregate} (and
 * with the broadcast of the result an MLlib iteration also pays), (c) {@code BarrierTaskContext.allGather} of
 * Base64 text, (d) {@code allReduce} with bfloat16 on the wire. Also group set-up time (cold and warm) and
 * the executors' heap allocation per all-reduce. Run through examples/spark-submit.sh (see the README).
 *
 * <p>Every method warms up with at least {@code --warmup} calls and for at least {@code --warmup-seconds}
 * (the JIT compiles the per-segment paths only after thousands of segments; a training loop runs thousands
 * of syncs).
 *
 * <p>Options: {@code --sizes 1000,100000,1000000,10000000,50000000 --tasks 4 --warmup 10 --warmup-seconds 3
 * --reps 10
 * --gather-max 1000000 --gather-reps 3 --out target/spark-sync}.
 */
public final class SparkSyncBenchmark {
  private SparkSyncBenchmark() {}

  /** What one rank measured in one barrier stage. */
  static final class RankSamples implements Serializable {
    private static final long serialVersionUID = 1L;
    long setupNanos;
    long[] nanos;
    long allocatedBytes;
    int ranksOnExecutor;
    String check;
  }

  /** Gradient element {@code i} of partition {@code p}: small multiples of 1/64, so every sum is exact. */
  static float element(int p, long i) {
    return ((i * 31 + p * 17L) % 1001 - 500) / 64f;
  }

  static float[] gradient(int p, int n) {
    float[] g = new float[n];
    fill(g, p);
    return g;
  }

  /** Puts task {@code p}'s gradient into {@code g} (again, after an all-reduce replaced it by the sum). */
  static void fill(float[] g, int p) {
    for (int i = 0; i < g.length; i++) {
      g[i] = element(p, i);
    }
  }

  /** Positions checked against the exact sum after every run. */
  static long[] probes(int n) {
    return new long[] {0, n / 3, n / 2, n - 1};
  }

  static String check(float[] sum, int tasks, boolean rounded) {
    for (long i : probes(sum.length)) {
      double exact = 0;
      for (int p = 0; p < tasks; p++) {
        exact += element(p, i);
      }
      double tolerance = rounded ? Math.abs(exact) * 0.02 + 0.02 : 0;
      if (Math.abs(sum[(int) i] - exact) > tolerance) {
        return "element " + i + " is " + sum[(int) i] + ", expected " + exact;
      }
    }
    return null;
  }

  /**
   * Bytes allocated so far by the calling task thread plus this rank's share of the library's I/O threads
   * (shared by the ranks of the executor), from HotSpot's per-thread allocation counters.
   */
  static long allocatedBytes(int ranksOnExecutor) {
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long io = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("collective-")) {
        io += Math.max(0, mx.getThreadAllocatedBytes(t.getId()));
      }
    }
    return mx.getCurrentThreadAllocatedBytes() + io / ranksOnExecutor;
  }

  /** Per-executor cache of the gradients treeAggregate sums (they exist before the sync, as in training). */
  static final class GradientCache {
    static final Map<Long, float[]> CACHE = new ConcurrentHashMap<>();

    static float[] get(int p, int n) {
      return CACHE.computeIfAbsent(n * 1024L + p, k -> gradient(p, n));
    }
  }

  /** treeAggregate's accumulator: starts empty so the zero value shipped with every task is tiny. */
  static final class Sum implements Serializable {
    private static final long serialVersionUID = 1L;
    float[] values;

    Sum add(float[] g) {
      if (values == null) {
        values = g.clone();
      } else {
        for (int i = 0; i < g.length; i++) {
          values[i] += g[i];
        }
      }
      return this;
    }

    Sum merge(Sum o) {
      return o.values == null ? this : add(o.values);
    }
  }

  /** Least warm-up time of every method (set from --warmup-seconds). */
  static long warmupNanos;

  public static void main(String[] argv) throws Exception {
    Args args = new Args(argv);
    long[] sizes = args.getLongs("sizes", new long[] {1_000, 100_000, 1_000_000, 10_000_000, 50_000_000});
    int tasks = args.getInt("tasks", 4);
    int warmup = args.getInt("warmup", 10);
    warmupNanos = (long) (args.getDouble("warmup-seconds", 3) * 1e9);
    int reps = args.getInt("reps", 10);
    long gatherMax = args.getLongs("gather-max", new long[] {1_000_000})[0];
    int gatherReps = args.getInt("gather-reps", 3);
    Path out = Paths.get(args.get("out", "target/spark-sync"));
    SparkConf conf = new SparkConf().setAppName("spark-collective gradient sync benchmark")
        .set("spark.plugins", "io.sparkcollective.spark.CollectivePlugin")
        .set("spark.ui.enabled", "false")
        // A failure (treeAggregate out of memory) is a result here: record it instead of retrying.
        .set("spark.task.maxFailures", "1")
        .set("spark.stage.maxConsecutiveAttempts", "1");
    if (!conf.contains("spark.master")) {
      conf.setMaster("local-cluster[2,2,4096]");
    }
    // Executors as large as their local-cluster workers (4 GiB), unless told otherwise: the default 1 GiB
    // would make 50 M parameters (two 200 MB arrays per task) a test of the heap, not of the sync.
    conf.setIfMissing("spark.executor.memory", "4g");
    JavaSparkContext sc = new JavaSparkContext(conf);
    try {
      int executors = TrainingJob.awaitExecutors(sc, TrainingJob.expectedExecutors(sc.master(), conf), 60_000);
      System.out.printf(Locale.ROOT, "Spark %s, master %s, %d executors, %d barrier tasks, %s, %d cores%n",
          sc.version(), sc.master() + ", executor heap " + conf.get("spark.executor.memory"), executors, tasks,
          System.getProperty("java.vm.name") + " "
          + System.getProperty("java.version"), Runtime.getRuntime().availableProcessors());
      run(sc, sizes, tasks, warmup, reps, gatherMax, gatherReps, out);
    } finally {
      sc.stop();
    }
  }

  /** A measured method at one size: per-repetition milliseconds, or the reason it failed. */
  static final class Result {
    final double[] ms;
    final String failure;

    Result(double[] ms, String failure) {
      this.ms = ms;
      this.failure = failure;
    }

    double median() {
      return ms == null ? Double.NaN : percentile(ms, 0.5);
    }

    String cell() {
      if (failure != null) {
        return "fails: " + failure;
      }
      if (ms == null) {
        return "not run";
      }
      return String.format(Locale.ROOT, "%s (%s-%s)", fmt(median()), fmt(percentile(ms, 0.1)),
          fmt(percentile(ms, 0.9)));
    }
  }

  static double percentile(double[] v, double q) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[(int) Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
  }

  static String fmt(double ms) {
    return ms >= 100 ? String.format(Locale.ROOT, "%.0f", ms) : ms >= 1 ? String.format(Locale.ROOT, "%.1f", ms)
        : String.format(Locale.ROOT, "%.3f", ms);
  }

  private static void run(JavaSparkContext sc, long[] sizes, int tasks, int warmup, int reps, long gatherMax,
      int gatherReps, Path out) throws Exception {
    List<Integer> ids = new ArrayList<>();
    for (int p = 0; p < tasks; p++) {
      ids.add(p);
    }
    JavaRDD<Integer> parts = sc.parallelize(ids, tasks);
    String[] methods = {"allReduce", "allReduce BF16 wire", "treeAggregate", "treeAggregate + broadcast",
        "allGather (Base64)"};
    Map<Long, Map<String, Result>> table = new LinkedHashMap<>();
    Map<Long, double[]> allocation = new LinkedHashMap<>();
    List<Double> setupMs = new ArrayList<>();
    double emptyStageMs = emptyBarrierStageMs(parts);
    for (long size : sizes) {
      int n = (int) size;
      Map<String, Result> row = new LinkedHashMap<>();
      double[] alloc = new double[2];
      for (int variant = 0; variant < 2; variant++) {
        boolean bf16 = variant == 1;
        List<RankSamples> samples = allReduceStage(parts, n, tasks, warmup, warmupNanos, reps, bf16);
        double[] ms = new double[reps];
        long setup = 0;
        double bytesPerOp = 0;
        for (RankSamples s : samples) {
          if (s.check != null) {
            throw new IllegalStateException("wrong all-reduce result at " + n + " floats: " + s.check);
          }
          for (int r = 0; r < reps; r++) {
            ms[r] = Math.max(ms[r], s.nanos[r] / 1e6);
          }
          setup = Math.max(setup, s.setupNanos);
          bytesPerOp = Math.max(bytesPerOp, (double) s.allocatedBytes / reps);
        }
        setupMs.add(setup / 1e6);
        alloc[variant] = bytesPerOp;
        row.put(methods[variant], new Result(ms, null));
        report(methods[variant], n, row.get(methods[variant]));
      }
      allocation.put(size, alloc);
      Result[] tree = treeAggregate(sc, parts, n, tasks, Math.min(warmup, 2), warmupNanos, reps);
      row.put(methods[2], tree[0]);
      row.put(methods[3], tree[1]);
      report(methods[2], n, tree[0]);
      report(methods[3], n, tree[1]);
      if (size <= gatherMax) {
        row.put(methods[4], allGather(parts, n, tasks, gatherReps));
        report(methods[4], n, row.get(methods[4]));
      } else {
        row.put(methods[4], new Result(null, null));
      }
      table.put(size, row);
    }
    write(table, allocation, setupMs, emptyStageMs, tasks, methods, out);
  }

  private static void report(String method, int n, Result r) {
    System.out.printf(Locale.ROOT, "%-26s %,12d floats: %s ms%n", method, n, r.cell());
  }

  private static double emptyBarrierStageMs(JavaRDD<Integer> parts) {
    double[] ms = new double[5];
    for (int i = 0; i < ms.length; i++) {
      long t0 = System.nanoTime();
      Barrier.mapPartitionsWithoutRetry(parts, it -> Collections.<Integer>emptyIterator()).count();
      ms[i] = (System.nanoTime() - t0) / 1e6;
    }
    return percentile(ms, 0.5);
  }

  /**
   * One barrier stage of {@code tasks} Java tasks that all-reduce {@code floats} floats: milliseconds of each
   * timed call (the slowest rank's), after {@code warmup} calls. For comparisons driven from elsewhere, e.g.
   * the PySpark benchmark through the driver's JVM.
   */
  public static double[] javaAllReduceMillis(JavaSparkContext sc, int tasks, int floats, int warmup, int reps) {
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < tasks; i++) {
      ids.add(i);
    }
    double[] ms = new double[reps];
    for (RankSamples s : allReduceStage(sc.parallelize(ids, tasks), floats, tasks, warmup, 0, reps, false)) {
      if (s.check != null) {
        throw new IllegalStateException("wrong all-reduce result at " + floats + " floats: " + s.check);
      }
      for (int r = 0; r < reps; r++) {
        ms[r] = Math.max(ms[r], s.nanos[r] / 1e6);
      }
    }
    return ms;
  }

  /**
   * Microseconds per all-reduce of {@code floats} in a loop of {@code calls} back-to-back calls (no barrier
   * between them, as a training loop makes them), one figure per round: the slowest rank's loop time / calls;
   * then, as the last element, the slowest rank's median call over all rounds (every call timed on its own).
   * For the per-call overhead of another path (PySpark's) without the skew a barrier before each call adds.
   * The median leaves out the few calls that wait for a core, which the loop means carry. A first, untimed
   * round of {@code warm} calls lets the JIT settle after other stages ran other types through the same code.
   */
  public static double[] javaAllReduceLoopMicros(JavaSparkContext sc, int tasks, int floats, int warm, int calls,
      int rounds) {
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < tasks; i++) {
      ids.add(i);
    }
    double[] us = new double[rounds + 1];
    List<double[]> all = Barrier.mapPartitionsWithoutRetry(sc.parallelize(ids, tasks), it -> {
      Communicator comm = Collective.communicator();
      float[] g = new float[floats];
      double[] mine = new double[rounds + 1];
      double[] each = new double[rounds * calls];
      for (int r = -1; r < rounds; r++) { // round -1 warms up
        comm.barrier();
        long t0 = System.nanoTime();
        long t = t0;
        for (int c = 0, m = r < 0 ? warm : calls; c < m; c++) {
          comm.allReduce(g, ReduceOp.SUM);
          long now = System.nanoTime();
          if (r >= 0) {
            each[r * calls + c] = (now - t) / 1e3;
          }
          t = now;
        }
        if (r >= 0) {
          mine[r] = (t - t0) / 1e3 / calls;
        }
      }
      mine[rounds] = each.length == 0 ? 0 : percentile(each, 0.5);
      return Collections.singletonList(mine).iterator();
    }).collect();
    for (double[] mine : all) {
      for (int r = 0; r <= rounds; r++) {
        us[r] = Math.max(us[r], mine[r]);
      }
    }
    return us;
  }

  private static List<RankSamples> allReduceStage(JavaRDD<Integer> parts, int n, int tasks, int warmup,
      long warmupNanos, int reps, boolean bf16) {
    return Barrier.mapPartitionsWithoutRetry(parts, it -> {
      long t0 = System.nanoTime();
      Communicator comm = Collective.communicator();
      RankSamples s = new RankSamples();
      s.setupNanos = System.nanoTime() - t0;
      BarrierTaskContext ctx = BarrierTaskContext.get();
      String me = ctx.getTaskInfos()[ctx.partitionId()].address();
      s.ranksOnExecutor = (int) Arrays.stream(ctx.getTaskInfos()).filter(i -> i.address().equals(me)).count();
      CollectiveOptions options = bf16 ? CollectiveOptions.DEFAULT.withWireType(DType.BF16)
          : CollectiveOptions.DEFAULT;
      // One array per task, refilled before every call (outside the timed part), so the task holds no more
      // than the gradient itself, as a training loop would.
      float[] g = new float[n];
      DataBuffer buffer = DataBuffer.of(g);
      long w0 = System.nanoTime();
      int[] more = {1};
      for (int w = 0; w < warmup || more[0] != 0; w++) {
        fill(g, comm.rank());
        // The barrier of the timed loop below too: run cold there, it let ranks leave it milliseconds apart
        // during the first measured size, and the timed call of the first out waited for the last.
        comm.barrier();
        comm.allReduce(buffer, ReduceOp.SUM, options);
        // Every rank must make the same number of calls: go on while any of them has not warmed up long enough.
        more[0] = System.nanoTime() - w0 < warmupNanos ? 1 : 0;
        comm.allReduce(more, ReduceOp.MAX);
      }
      s.check = check(g, tasks, bf16);
      s.nanos = new long[reps];
      long a0 = allocatedBytes(s.ranksOnExecutor);
      for (int r = 0; r < reps; r++) {
        fill(g, comm.rank());
        comm.barrier(); // every rank starts the timed call together
        long c0 = System.nanoTime();
        comm.allReduce(buffer, ReduceOp.SUM, options);
        s.nanos[r] = System.nanoTime() - c0;
      }
      s.allocatedBytes = allocatedBytes(s.ranksOnExecutor) - a0;
      if (s.check == null) {
        s.check = check(g, tasks, bf16);
      }
      return Collections.singletonList(s).iterator();
    }).collect();
  }

  private static Result[] treeAggregate(JavaSparkContext sc, JavaRDD<Integer> parts, int n, int tasks, int warmup,
      long warmupNanos, int reps) {
    double[] agg = new double[reps];
    double[] withBroadcast = new double[reps];
    try {
      long w0 = System.nanoTime();
      for (int w = 0; w < warmup || System.nanoTime() - w0 < warmupNanos; w++) {
        treeAggregateOnce(sc, parts, n, tasks);
      }
      for (int r = 0; r < reps; r++) {
        long[] t = treeAggregateOnce(sc, parts, n, tasks);
        agg[r] = t[0] / 1e6;
        withBroadcast[r] = t[1] / 1e6;
      }
      return new Result[] {new Result(agg, null), new Result(withBroadcast, null)};
    } catch (Exception e) { // SparkException is checked but thrown undeclared
      String why = firstLine(e);
      return new Result[] {new Result(null, why), new Result(null, why)};
    } finally {
      try {
        parts.foreachPartition(it -> GradientCache.CACHE.clear());
      } catch (Exception e) { // SparkException is checked but thrown undeclared
        System.out.println("could not clear the executors' gradient cache: " + firstLine(e));
      }
    }
  }

  /** One treeAggregate and the broadcast of its result: nanoseconds to the aggregate and to the end. */
  private static long[] treeAggregateOnce(JavaSparkContext sc, JavaRDD<Integer> parts, int n, int tasks) {
    long t0 = System.nanoTime();
    Sum sum = parts.treeAggregate(new Sum(), (acc, p) -> acc.add(GradientCache.get(p, n)), Sum::merge, 2);
    long t1 = System.nanoTime();
    // What an MLlib iteration does next: ship the new state to every task.
    Broadcast<float[]> b = sc.broadcast(sum.values);
    parts.foreachPartition(it -> {
      if (b.value().length != n) {
        throw new IllegalStateException("broadcast of " + b.value().length + " floats");
      }
    });
    b.destroy();
    long t2 = System.nanoTime();
    String wrong = check(sum.values, tasks, false);
    if (wrong != null) {
      throw new IllegalStateException("wrong treeAggregate result: " + wrong);
    }
    return new long[] {t1 - t0, t2 - t0};
  }

  static String firstLine(Throwable e) {
    String m = String.valueOf(e.getMessage());
    for (String key : new String[] {"OutOfMemoryError", "Java heap space", "exited caused by"}) {
      if (m.contains(key)) {
        return key.equals("exited caused by") ? "executor lost (likely out of memory)" : "out of memory";
      }
    }
    int eol = m.indexOf('\n');
    String line = eol < 0 ? m : m.substring(0, eol);
    return line.length() > 80 ? line.substring(0, 80) + "..." : line;
  }

  private static Result allGather(JavaRDD<Integer> parts, int n, int tasks, int reps) {
    try {
      List<double[]> perRank = Barrier.mapPartitionsWithoutRetry(parts, it -> {
        BarrierTaskContext ctx = BarrierTaskContext.get();
        float[] g = gradient(ctx.partitionId(), n);
        double[] ms = new double[reps];
        for (int r = -1; r < reps; r++) {
          long t0 = System.nanoTime();
          ByteBuffer bytes = ByteBuffer.allocate(n * 4).order(ByteOrder.LITTLE_ENDIAN);
          bytes.asFloatBuffer().put(g);
          String[] all = ctx.allGather(Base64.getEncoder().encodeToString(bytes.array()));
          float[] sum = new float[n];
          for (String s : all) {
            java.nio.FloatBuffer f = ByteBuffer.wrap(Base64.getDecoder().decode(s)).order(ByteOrder.LITTLE_ENDIAN)
                .asFloatBuffer();
            for (int i = 0; i < n; i++) {
              sum[i] += f.get(i);
            }
          }
          String wrong = check(sum, tasks, false);
          if (wrong != null) {
            throw new IllegalStateException("wrong allGather sum: " + wrong);
          }
          if (r >= 0) {
            ms[r] = (System.nanoTime() - t0) / 1e6;
          }
        }
        return Collections.singletonList(ms).iterator();
      }).collect();
      double[] ms = new double[reps];
      for (double[] r : perRank) {
        for (int i = 0; i < reps; i++) {
          ms[i] = Math.max(ms[i], r[i]);
        }
      }
      return new Result(ms, null);
    } catch (Exception e) { // SparkException is checked but thrown undeclared
      return new Result(null, firstLine(e));
    }
  }

  private static void write(Map<Long, Map<String, Result>> table, Map<Long, double[]> allocation,
      List<Double> setupMs, double emptyStageMs, int tasks, String[] methods, Path out) throws Exception {
    Files.createDirectories(out);
    StringBuilder md = new StringBuilder();
    md.append(String.format(Locale.ROOT, "Gradient sync of float32 parameters across %d barrier tasks: milliseconds "
        + "per sync, median (p10-p90) over the repetitions after warm-up; ratios are medians of the other method "
        + "over allReduce's.%n%n", tasks));
    md.append("| parameters |");
    for (String m : methods) {
      md.append(' ').append(m).append(" |");
    }
    md.append(" treeAggregate / allReduce | treeAggregate + broadcast / allReduce | allGather / allReduce |\n|---:|");
    for (int i = 0; i < methods.length + 3; i++) {
      md.append("---:|");
    }
    md.append('\n');
    LineChart chart = new LineChart("Gradient sync time across " + tasks + " barrier tasks (median)",
        "float32 parameters", "ms per sync").countX().logY();
    Map<String, double[]> curves = new LinkedHashMap<>();
    int row = 0;
    for (Map.Entry<Long, Map<String, Result>> e : table.entrySet()) {
      Map<String, Result> r = e.getValue();
      md.append("| ").append(count(e.getKey())).append(" |");
      for (String m : methods) {
        md.append(' ').append(r.get(m).cell()).append(" |");
        curves.computeIfAbsent(m, k -> new double[table.size()])[row] = r.get(m).median();
      }
      double ours = r.get(methods[0]).median();
      for (String m : new String[] {methods[2], methods[3], methods[4]}) {
        double theirs = r.get(m).median();
        md.append(Double.isNaN(theirs) ? " - |" : String.format(Locale.ROOT, " %.1fx |", theirs / ours));
      }
      md.append('\n');
      row++;
    }
    double[] x = table.keySet().stream().mapToDouble(Long::doubleValue).toArray();
    for (Map.Entry<String, double[]> c : curves.entrySet()) {
      chart.add(c.getKey(), x, c.getValue(), !c.getKey().startsWith("allReduce"));
    }
    md.append("\nHeap allocated per all-reduce per rank, in bytes (the task thread plus its share of the library's "
        + "I/O threads, largest rank; the barrier before each timed call included):\n\n"
        + "| parameters | allReduce | allReduce BF16 wire |\n|---:|---:|---:|\n");
    for (Map.Entry<Long, double[]> e : allocation.entrySet()) {
      md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f |%n", count(e.getKey()), e.getValue()[0],
          e.getValue()[1]));
    }
    double cold = setupMs.get(0);
    double[] warm = setupMs.subList(1, setupMs.size()).stream().mapToDouble(Double::doubleValue).toArray();
    md.append(String.format(Locale.ROOT, "%nGroup set-up at barrier-stage start (slowest of the %d ranks): first "
        + "stage (cold, connections made) %.1f ms; later stages (connections reused) median %.1f ms over %d "
        + "stages (max %.1f ms). An empty barrier stage costs %.0f ms.%n", tasks, cold,
        warm.length == 0 ? Double.NaN : percentile(warm, 0.5), warm.length,
        warm.length == 0 ? Double.NaN : percentile(warm, 1.0), emptyStageMs));
    Files.writeString(out.resolve("spark-sync.md"), md.toString());
    chart.write(out.resolve("spark-sync.png"));
    System.out.println();
    System.out.print(md);
    System.out.println("\nwritten: " + out.resolve("spark-sync.md") + ", " + out.resolve("spark-sync.png"));
  }

  static String count(double v) {
    long n = Math.round(v);
    return n >= 1_000_000 && n % 1_000_000 == 0 ? n / 1_000_000 + "M" : n >= 1000 && n % 1000 == 0 ? n / 1000 + "K"
        : Long.toString(n);
  }
}
