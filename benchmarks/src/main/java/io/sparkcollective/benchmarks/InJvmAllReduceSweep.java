package io.sparkcollective.benchmarks;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.engine.LocalGroup;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;

/**
 * All-reduce sweep over the in-JVM transport (ranks as threads), per algorithm and size, in the NCCL-tests
 * convention: median latency, algbw = bytes / time, busbw = algbw x 2(N-1)/N. It measures the engine's
 * own costs (framing, copies, kernels, hand-offs) without a network, and where the algorithms cross over.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar io.sparkcollective.benchmarks.InJvmAllReduceSweep
 * [ranks...]}.
 */
public final class InJvmAllReduceSweep {
  private static final int[] SIZES = {4, 256, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
  private static final Algorithm[] ALGORITHMS = {Algorithm.DIRECT, Algorithm.HALVING_DOUBLING, Algorithm.RING};

  private InJvmAllReduceSweep() {}

  public static void main(String[] args) throws Exception {
    int[] groupSizes = args.length == 0 ? new int[] {2, 4} : Arrays.stream(args).mapToInt(Integer::parseInt).toArray();
    System.out.println("# in-JVM all-reduce, float32 SUM, " + Runtime.getRuntime().availableProcessors() + " cores");
    System.out.printf("%-4s %-17s %10s %8s %12s %12s %10s %10s%n",
        "N", "algorithm", "bytes", "reps", "median_us", "min_us", "algbw_GB/s", "busbw_GB/s");
    for (int n : groupSizes) {
      for (int bytes : SIZES) {
        for (Algorithm a : ALGORITHMS) {
          run(n, a, bytes);
        }
      }
    }
  }

  private static void run(int n, Algorithm algorithm, int bytes) throws Exception {
    int floats = Math.max(1, bytes / 4);
    int reps = bytes <= (64 << 10) ? 2000 : bytes <= (1 << 20) ? 200 : 20;
    int rounds = 7;
    LocalGroup group = LocalGroup.create(n);
    CyclicBarrier start = new CyclicBarrier(n);
    long[][] nanos = new long[n][rounds];
    try {
      group.run(comm -> {
        int rank = comm.rank();
        float[] data = new float[floats];
        CollectiveOptions options = CollectiveOptions.DEFAULT.withAlgorithm(algorithm);
        for (int i = 0; i < Math.max(20, reps / 5); i++) {
          comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, options);
        }
        for (int round = 0; round < rounds; round++) {
          start.await();
          long t0 = System.nanoTime();
          for (int i = 0; i < reps; i++) {
            comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, options);
          }
          nanos[rank][round] = (System.nanoTime() - t0) / reps;
        }
        return null;
      });
    } finally {
      group.close();
    }
    long[] perRound = new long[rounds];
    for (int round = 0; round < rounds; round++) {
      for (int r = 0; r < n; r++) {
        perRound[round] = Math.max(perRound[round], nanos[r][round]);
      }
    }
    Arrays.sort(perRound);
    double median = perRound[rounds / 2] / 1e3;
    double algbw = floats * 4.0 / (perRound[rounds / 2] / 1e9) / 1e9;
    System.out.printf(Locale.ROOT, "%-4d %-17s %10d %8d %12.1f %12.1f %10.3f %10.3f%n", n, algorithm, floats * 4,
        reps, median, perRound[0] / 1e3, algbw, algbw * 2.0 * (n - 1) / n);
  }
}
