package io.sparkcollective.benchmarks;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.launch.LocalLauncher;
import io.sparkcollective.core.launch.PeerList;
import io.sparkcollective.core.transport.tcp.TcpEndpoint;
import io.sparkcollective.core.transport.tcp.direct.CallerDrivenIo;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * One rank of the TCP all-reduce sweep (started by {@link TcpSweep}). Measures like the Open MPI peer in
 * {@code shared/peers/mpi_allreduce.c}: per size, warm-up calls, then K calls per repetition chosen so a
 * repetition lasts about {@code --target} seconds (timed on calls that last a tenth of that, see secondsPerCall;
 * decided on rank 0), repetition time = max over ranks of (elapsed / K); prints median/min/max latency, algbw
 * and busbw = algbw x 2(N-1)/N, and checks the sum.
 * Before the sweep, the same procedure runs on 4 B to 1 MiB until {@code --warmup-ops} (50000) all-reduces
 * have run and then until no rank's JIT compiled during a whole pass (at most {@code --quiet-passes}, 40, more);
 * and at each size, after the warm-up calls, passes of 0.1 s until no rank's JIT compiled for 50 ms over the last
 * ten (at most {@code --size-quiet-passes}, 40; 0: the warm-up calls alone, like the peer's).
 * With {@code --ranks-per-process k} each process runs k ranks on threads that share its endpoint, as barrier
 * tasks share their executor's (the hierarchical all-reduce). {@code --wire BF16}
 * sends bfloat16 on the wire (the sums checked are small integers, exact in it). {@code --vector direct} keeps
 * the vector in a little-endian direct buffer (as a Python task's array from {@code comm.empty} is, or a Java
 * task's direct buffer) instead of a {@code float[]} (the default, {@code --vector heap}).
 */
public final class TcpSweepWorker {
  static final long[] DEFAULT_SIZES = {4, 64 << 10, 1 << 20, 16 << 20, 64 << 20};

  private TcpSweepWorker() {}

  public static void main(String[] argv) throws Exception {
    Args args = new Args(argv);
    int process = Integer.parseInt(args.require("rank"));
    List<InetSocketAddress> endpoints = PeerList.parse(args.require("peers"));
    int perProcess = args.getInt("ranks-per-process", 1);
    List<InetSocketAddress> peers = new ArrayList<>();
    for (InetSocketAddress e : endpoints) {
      for (int t = 0; t < perProcess; t++) {
        peers.add(e);
      }
    }
    Map<String, String> settings = new HashMap<>();
    for (String kv : args.get("conf", "").split(",")) {
      if (!kv.isBlank()) {
        settings.put(kv.substring(0, kv.indexOf('=')).trim(), kv.substring(kv.indexOf('=') + 1).trim());
      }
    }
    CollectiveConfig config = CollectiveConfig.from(settings);
    InetSocketAddress me = endpoints.get(process);
    try (TcpEndpoint endpoint = TcpEndpoint.start(me.getHostString(), me.getPort(), LocalLauncher.secret(),
        config)) {
      // Ranks of one process share its endpoint (as barrier tasks share their executor's): one thread each.
      ExecutorService threads = Executors.newFixedThreadPool(perProcess);
      List<Future<?>> ranks = new ArrayList<>();
      for (int t = 0; t < perProcess; t++) {
        int rank = process * perProcess + t;
        ranks.add(threads.submit(() -> {
          runRank(args, endpoint, config, rank, peers, perProcess);
          return null;
        }));
      }
      try {
        for (Future<?> f : ranks) {
          f.get();
        }
      } finally {
        threads.shutdownNow();
      }
      CallerDrivenIo io = endpoint.callerIo();
      if (process == 0 && io != null) {
        System.out.printf(Locale.ROOT, "# process 0's endpoint: %d segments sent from the vector's memory (%d with a "
            + "rest copied), %d payloads read into it (%d moved out part-read), %d through shared memory%n",
            io.writtenFrom(), io.spilled(), io.readIntoPosted(), io.reclaimed(), io.sharedPayloads());
      }
    }
  }

  private static final long[] WARMUP_SIZES = {4, 4096, 65536, 1 << 20};
  /** Passes of the warm-up beyond --warmup-ops while the JIT still compiles, by default. */
  private static final int QUIET_PASSES = 40;
  /** Passes of the warm-up at each measured size, at most, by default (see warmSize). */
  private static final int SIZE_QUIET_PASSES = 40;
  /** Passes over which the warm-up at one size judges the JIT's compilations (with SIZE_PASS_NANOS, a second). */
  private static final int SIZE_QUIET_RUN = 10;
  /** The compilation time over the last SIZE_QUIET_RUN passes below which one size counts as warm. */
  private static final long SIZE_QUIET_MILLIS = 50;
  /** Shortest pass of the warm-up at one size. */
  private static final long SIZE_PASS_NANOS = 100_000_000L;

  /** Milliseconds this JVM's JIT has spent compiling so far (0 where the JVM does not say). */
  private static long compilationMillis() {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : 0;
  }

  private static void runRank(Args args, TcpEndpoint endpoint, CollectiveConfig config, int rank,
      List<InetSocketAddress> peers, int perProcess) throws IOException {
    int n = peers.size();
    int reps = args.getInt("reps", 7);
    double target = args.getDouble("target", 0.25);
    long[] sizes = args.getLongs("sizes", DEFAULT_SIZES);
    int warmupOps = args.getInt("warmup-ops", 50000);
    int quietPasses = args.getInt("quiet-passes", QUIET_PASSES);
    int sizeQuietPasses = args.getInt("size-quiet-passes", SIZE_QUIET_PASSES);
    Algorithm algorithm = Algorithm.valueOf(args.get("algorithm", "AUTO"));
    String wire = args.get("wire", "F32");
    String vector = args.get("vector", "heap");
    if (!vector.equals("heap") && !vector.equals("direct")) {
      throw new IllegalArgumentException("--vector " + vector + ": heap or direct");
    }
    boolean direct = vector.equals("direct");
    try (Communicator comm = TcpGroup.join(endpoint, "sweep", rank, peers, config)) {
      CollectiveOptions options = CollectiveOptions.DEFAULT.withAlgorithm(algorithm)
          .withWireType(wire.equals("F32") ? null : DType.valueOf(wire));
      StringBuilder csv = new StringBuilder("n,algorithm,bytes,k,median_us,min_us,max_us,algbw_gbs,busbw_gbs,check\n");
      if (rank == 0) {
        System.out.printf(Locale.ROOT, "# spark-collective TCP all-reduce float32 sum, N=%d (%d per process), reps=%d, "
            + "target_rep_s=%.2f, algorithm=%s, wire=%s, vector=%s%n", n, perProcess, reps, target, algorithm, wire,
            vector);
        System.out.printf(Locale.ROOT, "%-10s %6s %12s %12s %12s %10s %10s %s%n", "bytes", "K", "median_us", "min_us",
            "max_us", "algbw_GB/s", "busbw_GB/s", "check");
      }
      // JIT warm-up: the whole measuring procedure (all-reduces of several types and operations, barriers,
      // broadcasts) on small sizes, so that what is timed runs compiled code whose profile no longer changes.
      // After --warmup-ops all-reduces, more passes until no rank's JIT compiled anything during a whole pass (at
      // most --quiet-passes more; 0: the fixed count alone, as before): after the fixed count the first size
      // measured often ran beside the compiler threads on this machine's two cores and read up to 10x its time.
      long warmed = 0;
      int extra = 0;
      boolean quiet = false;
      while (!quiet) {
        long compiled = compilationMillis();
        warmed += sweep(comm, WARMUP_SIZES, options, n, rank, 3, 0.02, null, direct, 0);
        if (warmed >= warmupOps) {
          quiet = !compiledAnywhere(comm, compiled);
          if (!quiet && extra == quietPasses) {
            break;
          }
          extra += quiet ? 0 : 1;
        }
      }
      if (rank == 0) {
        System.out.printf(Locale.ROOT, "# warm-up: %d all-reduces, %d passes past the first %d, the JIT %s%n",
            warmed, extra, warmupOps, quiet ? "quiet for the last pass" : "still compiling");
      }
      sweep(comm, sizes, options, n, rank, reps, target, csv, direct, sizeQuietPasses);
      String csvPath = args.get("csv", "");
      if (rank == 0 && !csvPath.isEmpty()) {
        write(csvPath, csv.toString());
      }
    }
  }

  private static void write(String path, String text) throws IOException {
    Files.createDirectories(Paths.get(path).toAbsolutePath().getParent());
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(Paths.get(path)))) {
      w.print(text);
    }
  }

  /**
   * Whether any rank's JIT compiled since its own {@code before} (from {@link #compilationMillis}): a MAX
   * all-reduce of a flag, so that every rank decides alike.
   */
  private static boolean compiledAnywhere(Communicator comm, long before) {
    double[] busy = {compilationMillis() > before ? 1 : 0};
    comm.allReduce(busy, ReduceOp.MAX);
    return busy[0] != 0;
  }

  /**
   * Warms one size up: passes of all-reduces of at least {@link #SIZE_PASS_NANOS} until, over the last
   * {@link #SIZE_QUIET_RUN} passes (a second), the busiest rank's JIT compiled for less than
   * {@link #SIZE_QUIET_MILLIS} ms; at most {@code passes}. Code that only large vectors take (folding a segment
   * straight from the wire from 8 MiB, for one) is first compiled at the first size that needs it, and buffers
   * as long as the vector are touched for the first time there: with a few all-reduces of warm-up the first
   * repetitions of 16 MiB on two ranks read up to 2-3x the later ones, and the number of all-reduces per
   * repetition, fixed from the first three, came out too small. A single pass without a compilation is not
   * enough where a size's first calls take paths the compiled code had never seen: the JIT then recompiles the
   * methods those paths run through, one after another over seconds (through shared memory at four ranks on
   * two cores, 16 MiB: about a quarter of the machine's CPU in compiler threads for 3 s), their profiled code
   * runs meanwhile, and a 0.1 s pass of a few 20 ms calls often ends between two compilations. Nor does the JIT
   * ever stop for good: some method somewhere reaches its threshold every second or so, hence a budget rather
   * than silence. Each all-reduce is followed by a one-int MIN all-reduce, so that every rank stops a pass after
   * the same call.
   */
  private static void warmSize(Communicator comm, DataBuffer buf, CollectiveOptions options, int rank, long bytes,
      int passes) {
    int pass = 0;
    long ops = 0;
    long[] window = new long[SIZE_QUIET_RUN];
    long windowMillis = Long.MAX_VALUE;
    int[] more = {1};
    while (windowMillis >= SIZE_QUIET_MILLIS && pass < passes) {
      long compiled = compilationMillis();
      long end = System.nanoTime() + SIZE_PASS_NANOS;
      more[0] = 1;
      while (more[0] == 1) {
        comm.allReduce(buf, ReduceOp.SUM, options);
        ops++;
        more[0] = System.nanoTime() - end < 0 ? 1 : 0;
        comm.allReduce(more, ReduceOp.MIN);
      }
      window[pass % SIZE_QUIET_RUN] = compiledMillisMax(comm, compiled);
      pass++;
      windowMillis = pass < SIZE_QUIET_RUN ? Long.MAX_VALUE : Arrays.stream(window).sum();
    }
    if (rank == 0) {
      System.out.printf(Locale.ROOT, "# warm-up at %d bytes: %d all-reduces in %d passes, the JIT %s%n", bytes, ops,
          pass, windowMillis < SIZE_QUIET_MILLIS ? "compiling " + windowMillis + " ms in the last second"
              : "still compiling");
    }
  }

  /**
   * Seconds one all-reduce takes, for the number per repetition: from 3 calls after a barrier, as the peers
   * measure, or from 4, 16, 64... times as many until they last a tenth of {@code target}, the slowest rank's
   * time deciding on every rank. Three calls of a few microseconds are a poor sample: right after the barrier
   * the ranks leave it apart, and a call that waits longer for its peer (a wake-up, a core taken) weighs a third;
   * with two ranks at 4 bytes, three calls gave anywhere from 121 to 16 096 calls per repetition (repetitions of
   * 0.8 to 100 ms instead of 250) where Open MPI's gave 34 000-41 000.
   */
  private static double secondsPerCall(Communicator comm, DataBuffer buf, CollectiveOptions options,
      double target) {
    long calls = 3;
    while (true) {
      comm.barrier();
      long t0 = System.nanoTime();
      for (long c = 0; c < calls; c++) {
        comm.allReduce(buf, ReduceOp.SUM, options);
      }
      double[] elapsed = {(System.nanoTime() - t0) / 1e9};
      comm.allReduce(elapsed, ReduceOp.MAX);
      if (elapsed[0] >= target / 10 || calls >= 1 << 20) {
        return elapsed[0] / calls;
      }
      calls *= 4;
    }
  }

  /** The most milliseconds any rank's JIT compiled since its own {@code before}: a MAX all-reduce. */
  private static long compiledMillisMax(Communicator comm, long before) {
    long[] spent = {compilationMillis() - before};
    comm.allReduce(spent, ReduceOp.MAX);
    return spent[0];
  }

  /**
   * Measures every size (printing rank 0's rows when {@code csv} is not null); returns the number of
   * all-reduces it ran. With {@code direct} the vector is a little-endian direct buffer.
   */
  private static long sweep(Communicator comm, long[] sizes, CollectiveOptions options, int n, int rank, int reps,
      double target, StringBuilder csv, boolean direct, int sizeQuietPasses) {
    long ops = 0;
    for (long bytes : sizes) {
      int count = (int) Math.max(1, bytes / 4);
      float[] data = direct ? null : new float[count];
      ByteBuffer store = direct ? ByteBuffer.allocateDirect(count * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN) : null;
      DataBuffer buf = direct ? DataBuffer.of(store, DType.F32) : DataBuffer.of(data);
      int warm = bytes <= (1 << 20) ? 20 : 3;
      for (int w = 0; w < warm; w++) {
        comm.allReduce(buf, ReduceOp.SUM, options);
      }
      if (sizeQuietPasses > 0) {
        warmSize(comm, buf, options, rank, bytes, sizeQuietPasses);
      }
      double one = secondsPerCall(comm, buf, options, target);
      int[] k = {(int) Math.max(1, Math.min(100_000, target / one))};
      comm.broadcast(DataBuffer.of(k), 0);
      double[] times = new double[reps];
      for (int r = 0; r < reps; r++) {
        comm.barrier();
        long a = System.nanoTime();
        for (int i = 0; i < k[0]; i++) {
          comm.allReduce(buf, ReduceOp.SUM, options);
        }
        double[] el = {(System.nanoTime() - a) / 1e9 / k[0]};
        comm.allReduce(el, ReduceOp.MAX);
        times[r] = el[0];
        ops += k[0];
      }
      FloatBuffer floats = direct ? store.asFloatBuffer() : FloatBuffer.wrap(data);
      for (int i = 0; i < count; i++) {
        floats.put(i, rank + 1);
      }
      comm.allReduce(buf, ReduceOp.SUM, options);
      float expect = n * (n + 1) / 2f;
      boolean right = floats.get(0) == expect && floats.get(count - 1) == expect && floats.get(count / 2) == expect;
      int[] ok = {right ? 1 : 0};
      comm.allReduce(ok, ReduceOp.MIN);
      Arrays.sort(times);
      double med = times[reps / 2];
      double alg = count * 4.0 / med / 1e9;
      double bus = alg * 2.0 * (n - 1) / n;
      if (rank == 0 && csv != null) {
        String check = ok[0] == 1 ? "OK" : "FAIL";
        System.out.printf(Locale.ROOT, "%-10d %6d %12.1f %12.1f %12.1f %10.3f %10.3f %s%n", count * 4L, k[0],
            med * 1e6, times[0] * 1e6, times[reps - 1] * 1e6, alg, bus, check);
        csv.append(String.format(Locale.ROOT, "%d,%s,%d,%d,%.1f,%.1f,%.1f,%.4f,%.4f,%s%n", n, options.algorithm(),
            count * 4L, k[0], med * 1e6, times[0] * 1e6, times[reps - 1] * 1e6, alg, bus, check));
      }
      if (ok[0] != 1) {
        throw new IllegalStateException("wrong sum at " + count * 4L + " bytes");
      }
    }
    return ops;
  }
}
