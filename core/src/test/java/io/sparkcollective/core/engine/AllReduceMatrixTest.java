package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.Reference;
import io.sparkcollective.core.testing.TypedData;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every all-reduce algorithm against the sequential reference, for group sizes 1 to 17, lengths 0, 1,
 * below N, not divisible by N and several segments, every dtype, every op, and every memory form. Float
 * inputs are small integers so any summation order is exact and the reference is bit-exact; integer
 * inputs span the whole range so wrapping on overflow is checked too.
 */
@Timeout(600)
class AllReduceMatrixTest {
  private static final int SEGMENT_BYTES = 4096;

  static Stream<Arguments> groups() {
    List<Arguments> cases = new ArrayList<>();
    for (Algorithm a : new Algorithm[] {Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING,
        Algorithm.RING_2D, Algorithm.RECURSIVE_DOUBLING}) {
      for (int n = 1; n <= 17; n++) {
        cases.add(Arguments.of(a, n));
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0} on {1} ranks")
  @MethodSource("groups")
  void shouldMatchSequentialReferenceForEveryTypeOpAndLength(Algorithm algorithm, int n) {
    matchReference(algorithm, n, new LinkedHashSet<>(List.of(0, 1, Math.max(0, n - 1), n + 1, 3 * n + 2, 2500)));
  }

  /**
   * RING runs long vectors in passes over pieces of n chunks of 8 segments each (1024 F32 / 512 F64 / 2048 F16
   * elements per 4 KiB segment here): these lengths take 2 to 5 passes depending on the type, with a last
   * piece of one element or an exactly full one.
   */
  @ParameterizedTest(name = "RING in passes on {0} ranks")
  @ValueSource(ints = {2, 3, 5})
  void shouldMatchSequentialReferenceWhenTheRingRunsInPasses(int n) {
    matchReference(Algorithm.RING, n, new LinkedHashSet<>(List.of(8192 * n * 2 + 1, 4096 * n * 3)));
  }

  /**
   * What a rank has in flight stays within a few chunks of 8 segments however long the vector: the pool (shared
   * by the group's ranks) never holds more frames than that, where one pass over the whole vector would put a
   * chunk of 320 segments per rank in flight.
   */
  @ParameterizedTest(name = "RING on {0} ranks, 40 passes")
  @ValueSource(ints = {2, 3})
  void shouldKeepWhatIsInFlightBoundedForLongVectors(int n) {
    int segment = SEGMENT_BYTES / 4;
    int len = 40 * 8 * segment * n;
    LocalGroup group = LocalGroup.create(n,
        CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, String.valueOf(SEGMENT_BYTES))),
        UnaryOperator.identity());
    try {
      GroupHarness.run(group, Duration.ofSeconds(120), comm -> {
        float[] data = new float[len];
        for (int i = 0; i < len; i++) {
          data[i] = (i % 977) * (comm.rank() + 1);
        }
        comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING));
        float ranks = n * (n + 1) / 2f;
        for (int i = 0; i < len; i++) {
          if (data[i] != (i % 977) * ranks) {
            throw new AssertionError("rank " + comm.rank() + " element " + i + ": " + data[i]);
          }
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
    long frames = group.fabric().pool().allocated();
    assertTrue(frames <= 4L * 8 * n + 8, "the pool grew to " + frames + " frames for " + n + " ranks");
  }

  private static void matchReference(Algorithm algorithm, int n, Set<Integer> lengths) {
    LocalGroup group = LocalGroup.create(n,
        CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, String.valueOf(SEGMENT_BYTES))),
        UnaryOperator.identity());
    CollectiveOptions options = CollectiveOptions.DEFAULT.withAlgorithm(algorithm);
    try {
      List<Integer> checked = GroupHarness.run(group, Duration.ofSeconds(120), comm -> {
        int count = 0;
        int variant = 0;
        for (int len : lengths) {
          for (DType dtype : DType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
              // Ranks of one operation in different memory forms: those of this process read each other in place.
              TypedData.Form form = TypedData.Form.values()[(variant++ + comm.rank()) % TypedData.Form.values().length];
              long seed = 31L * len + 7L * dtype.ordinal() + op.ordinal();
              long[][] ints = new long[n][];
              double[][] floats = new double[n][];
              for (int r = 0; r < n; r++) {
                ints[r] = integers(seed, r, len, dtype);
                floats[r] = smallFloats(seed, r, len, op);
              }
              TypedData mine = TypedData.of(dtype, form, ints[comm.rank()], floats[comm.rank()]);
              comm.allReduce(mine.buffer(), op, options);
              long[] expected = dtype.isFloating()
                  ? Reference.reduceExactFloats(dtype, op, floats)
                  : Reference.reduceIntegers(dtype, op, ints);
              long[] actual = IntStream.range(0, len).mapToLong(mine::bits).toArray();
              assertArrayEquals(expected, actual,
                  () -> algorithm + " n=" + n + " rank " + comm.rank() + " len=" + len + " " + dtype + " " + op
                      + " " + form);
              count++;
            }
          }
        }
        return count;
      });
      for (int c : checked) {
        assertEquals(lengths.size() * DType.values().length * ReduceOp.values().length, c);
      }
    } finally {
      GroupHarness.closeAll(group);
    }
    assertEquals(0, group.fabric().pool().outstanding(), "frames leaked");
  }

  static Stream<Arguments> largeCases() {
    List<Arguments> cases = new ArrayList<>();
    for (Algorithm a : new Algorithm[] {Algorithm.RING, Algorithm.HALVING_DOUBLING, Algorithm.DIRECT,
        Algorithm.RING_2D, Algorithm.RECURSIVE_DOUBLING}) {
      for (int n : new int[] {2, 3, 4, 7}) {
        cases.add(Arguments.of(a, n));
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0} on {1} ranks, 6 MiB")
  @MethodSource("largeCases")
  void shouldReduceSeveralMebibytesInManySegments(Algorithm algorithm, int n) {
    int len = (6 << 20) / 4 + 3;
    LocalGroup group = LocalGroup.create(n);
    try {
      GroupHarness.run(group, Duration.ofSeconds(120), comm -> {
        float[] data = new float[len];
        for (int i = 0; i < len; i++) {
          data[i] = (float) ((i % 1000) - 500 + comm.rank());
        }
        comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(algorithm));
        float rankSum = n * (n - 1) / 2f;
        for (int i = 0; i < len; i++) {
          float expected = n * (float) ((i % 1000) - 500) + rankSum;
          if (data[i] != expected) {
            throw new AssertionError("rank " + comm.rank() + " element " + i + ": " + data[i] + " != " + expected);
          }
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldGiveBitwiseEqualAndRepeatableResultsForRandomFloats() {
    for (Algorithm algorithm : new Algorithm[] {Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING,
        Algorithm.RING_2D, Algorithm.RECURSIVE_DOUBLING}) {
      for (int n : new int[] {3, 5, 8}) {
        int len = 10_007;
        List<float[]> first = runRandom(algorithm, n, len);
        List<float[]> second = runRandom(algorithm, n, len);
        double[] exact = new double[len];
        for (int r = 0; r < n; r++) {
          SplittableRandom rnd = new SplittableRandom(r);
          for (int i = 0; i < len; i++) {
            exact[i] += (float) rnd.nextGaussian();
          }
        }
        for (int r = 0; r < n; r++) {
          assertArrayEquals(first.get(0), first.get(r), algorithm + " n=" + n + ": rank " + r + " differs from rank 0");
          assertArrayEquals(first.get(r), second.get(r), algorithm + " n=" + n + ": run 2 differs on rank " + r);
        }
        for (int i = 0; i < len; i++) {
          float got = first.get(0)[i];
          assertTrue(Math.abs(got - exact[i]) <= 1e-5 * n * (1 + Math.abs(exact[i])),
              algorithm + " element " + i + ": " + got + " vs " + exact[i]);
        }
      }
    }
  }

  /**
   * NaNs of different payloads meet in every element: every rank must end with a NaN there. Which payload it
   * keeps is not fixed: Java does not say which operand's payload a sum of two NaNs keeps, and the JIT may swap
   * the operands of a commutative operation in one compiled version of a loop and not in another (on JDK 25
   * DIRECT's ranks, which all combine in rank order, came out with different payloads), so only NaN-ness is
   * checked, with the finite neighbours that share the vector exact.
   */
  @Test
  void shouldGiveEveryRankANaNWhereNaNsOfDifferentPayloadsMeet() {
    for (Algorithm algorithm : new Algorithm[] {Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING,
        Algorithm.RING_2D, Algorithm.RECURSIVE_DOUBLING}) {
      for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN}) {
        for (int n : new int[] {2, 3, 4, 6, 8}) {
          int len = 1500;
          LocalGroup group = LocalGroup.create(n,
              CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")), UnaryOperator.identity());
          List<float[]> out;
          try {
            out = GroupHarness.run(group, Duration.ofSeconds(60), comm -> {
              float[] data = new float[len];
              for (int i = 0; i < len; i++) {
                // Every third element a quiet NaN whose payload names the rank and the element, else a small
                // integer (exact in any order of summation).
                data[i] = i % 3 == 0 ? Float.intBitsToFloat(0x7FC00000 | (comm.rank() + 1) << 12 | i)
                    : comm.rank() + i % 7;
              }
              comm.allReduce(DataBuffer.of(data), op, CollectiveOptions.DEFAULT.withAlgorithm(algorithm));
              return data;
            });
          } finally {
            GroupHarness.closeAll(group);
          }
          for (int r = 0; r < n; r++) {
            for (int i = 0; i < len; i++) {
              float got = out.get(r)[i];
              String where = algorithm + " " + op + " n=" + n + ": element " + i + " of rank " + r;
              if (i % 3 == 0) {
                assertTrue(Float.isNaN(got), where + " is " + got + ", not NaN");
                continue;
              }
              float expected = 0;
              for (int q = 0; q < n; q++) {
                float v = q + i % 7;
                expected = q == 0 ? v : op == ReduceOp.SUM ? expected + v : op == ReduceOp.MAX
                    ? Math.max(expected, v) : Math.min(expected, v);
              }
              assertEquals(expected, got, where);
            }
          }
        }
      }
    }
  }

  private static List<float[]> runRandom(Algorithm algorithm, int n, int len) {
    LocalGroup group = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")),
        UnaryOperator.identity());
    try {
      return GroupHarness.run(group, Duration.ofSeconds(60), comm -> {
        SplittableRandom rnd = new SplittableRandom(comm.rank());
        float[] data = new float[len];
        for (int i = 0; i < len; i++) {
          data[i] = (float) rnd.nextGaussian();
        }
        comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(algorithm));
        return data;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  /** Full-range integers for SUM/AVG/PROD (so they wrap), any values for MIN/MAX. */
  static long[] integers(long seed, int rank, int len, DType dtype) {
    SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + rank);
    long[] v = new long[len];
    for (int i = 0; i < len; i++) {
      v[i] = dtype == DType.I32 ? rnd.nextInt() : rnd.nextLong();
    }
    return v;
  }

  /** Small integers whose sums and products are exact in every float type (products are powers of two). */
  static double[] smallFloats(long seed, int rank, int len, ReduceOp op) {
    SplittableRandom rnd = new SplittableRandom(seed * 1_000_033L + rank);
    double[] v = new double[len];
    for (int i = 0; i < len; i++) {
      if (op == ReduceOp.PROD) {
        int k = rnd.nextInt(4);
        v[i] = k == 0 ? -2 : k == 1 ? -1 : k == 2 ? 1 : 2;
      } else {
        v[i] = rnd.nextInt(17) - 8;
      }
    }
    return v;
  }
}
