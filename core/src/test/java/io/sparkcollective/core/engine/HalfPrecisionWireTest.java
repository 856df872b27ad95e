package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.kernel.HalfFloats;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.NodeMapTransport;
import io.sparkcollective.core.testing.Reference;
import io.sparkcollective.core.testing.SendTap;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * F16 and BF16 reductions: by default in their own 16 bits on the wire (half the bytes of the exact mode, each
 * partial sum rounded where it is sent on, the same bits on every rank, within the stated bound of the exact
 * sum); with an F32 wire (the exact mode) the exact sum rounded once.
 */
@Timeout(300)
class HalfPrecisionWireTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);
  private static final CollectiveOptions EXACT = CollectiveOptions.DEFAULT.withWireType(DType.F32);

  /** Payload bytes every rank of a group sent, in total. */
  /**
   * Values of {@code dtype} that are multiples of 2^-6 below 64 in magnitude: any sum of up to 8 of them is
   * exact in F32 (and in double), so the exact mode's result is the exact sum rounded once, bit for bit.
   */
  private static double[] inputs(DType dtype, int rank, int len) {
    SplittableRandom rnd = new SplittableRandom(1009L * rank + len + dtype.ordinal());
    double[] v = new double[len];
    for (int i = 0; i < len; i++) {
      float f = rnd.nextInt(-4096, 4097) / 64f;
      v[i] = dtype == DType.F16 ? HalfFloats.f16ToFloat(HalfFloats.floatToF16(f))
          : HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(f));
    }
    return v;
  }

  private static short[] bits(DType dtype, double[] v) {
    short[] s = new short[v.length];
    for (int i = 0; i < v.length; i++) {
      s[i] = dtype == DType.F16 ? HalfFloats.floatToF16((float) v[i]) : HalfFloats.floatToBf16((float) v[i]);
    }
    return s;
  }

  private static float value(DType dtype, short bits) {
    return dtype == DType.F16 ? HalfFloats.f16ToFloat(bits) : HalfFloats.bf16ToFloat(bits);
  }

  /** A little-endian buffer of the half-precision bits, as a DataBuffer of {@code dtype}. */
  private static ByteBuffer buffer(short[] bits) {
    ByteBuffer b = ByteBuffer.allocate(2 * bits.length).order(ByteOrder.LITTLE_ENDIAN);
    b.asShortBuffer().put(bits);
    return b;
  }

  private static short[] read(ByteBuffer b) {
    short[] s = new short[b.capacity() / 2];
    b.duplicate().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(s);
    return s;
  }

  private static List<short[]> allReduce(LocalGroup group, DType dtype, int len, ReduceOp op,
      CollectiveOptions options) {
    return GroupHarness.run(group, LIMIT, comm -> {
      ByteBuffer b = buffer(bits(dtype, inputs(dtype, comm.rank(), len)));
      comm.allReduce(DataBuffer.of(b, dtype), op, options);
      return read(b);
    });
  }

  @ParameterizedTest(name = "{0} {1} on {2} ranks")
  @CsvSource({"F16, RING, 2", "F16, RING, 3", "F16, RING, 5", "F16, HALVING_DOUBLING, 4", "F16, HALVING_DOUBLING, 6",
      "F16, DIRECT, 3", "BF16, RING, 4", "BF16, RING, 7", "BF16, HALVING_DOUBLING, 8", "BF16, DIRECT, 5",
      "F16, RECURSIVE_DOUBLING, 4", "BF16, RECURSIVE_DOUBLING, 6"})
  void shouldSendHalfTheBytesOfTheExactModeWithinTheBoundAndTheSameBitsOnEveryRank(DType dtype,
      Algorithm algorithm, int n) {
    AtomicLong sent = new AtomicLong();
    LocalGroup group = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")),
        t -> new SendTap(t, f -> sent.addAndGet(f.payload().size())));
    int len = 20_011;
    double u = dtype == DType.F16 ? 0x1p-11 : 0x1p-8;
    try {
      double[][] in = new double[n][];
      for (int r = 0; r < n; r++) {
        in[r] = inputs(dtype, r, len);
      }
      for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX}) {
        String where = dtype + " " + algorithm + " " + op + " on " + n + " ranks";
        long[] exact = Reference.reduceExactFloats(dtype, op, in);

        sent.set(0);
        List<short[]> wide = allReduce(group, dtype, len, op, EXACT.withAlgorithm(algorithm));
        long exactBytes = sent.get();
        sent.set(0);
        List<short[]> narrow = allReduce(group, dtype, len, op, CollectiveOptions.DEFAULT.withAlgorithm(algorithm));
        long narrowBytes = sent.get();

        assertEquals(exactBytes, 2 * narrowBytes, where + ": bytes sent in the exact mode against the default");
        int differ = 0;
        for (int r = 0; r < n; r++) {
          assertArrayEquals(narrow.get(0), narrow.get(r), where + ": rank " + r + " differs from rank 0");
          assertArrayEquals(wide.get(0), wide.get(r), where + " (exact): rank " + r + " differs from rank 0");
        }
        for (int i = 0; i < len; i++) {
          double want = Double.longBitsToDouble(exact[i]);
          assertEquals(want, value(dtype, wide.get(0)[i]), 0, where + " (exact) element " + i);
          double got = value(dtype, narrow.get(0)[i]);
          double magnitude = 0;
          for (int r = 0; r < n; r++) {
            magnitude += Math.abs(in[r][i]);
          }
          if (op == ReduceOp.AVG) {
            magnitude /= n;
          }
          // Up to n-1 partial sums rounded on the way, one rounding at the end (AVG: of the quotient too).
          double bound = (n - 1) * u * magnitude + 2 * u * Math.abs(want);
          assertTrue(Math.abs(got - want) <= bound, where + " element " + i + ": " + got + " vs " + want);
          if (got != want) {
            differ++;
          }
        }
        if (op == ReduceOp.MAX || op == ReduceOp.SUM && (algorithm == Algorithm.DIRECT || n == 2)) {
          // A maximum rounds nothing; DIRECT and two ranks sum the inputs themselves, rounded once at the end.
          assertEquals(0, differ, where + ": elements off the exact mode");
        } else if (op == ReduceOp.SUM) {
          assertTrue(differ > 0, where + ": no partial sum was rounded on the way");
        }
        // (AVG rounds the sum, the same on every rank, before it divides: within the bound, not exact.)
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  /**
   * A tile of the rounding's bookkeeping (1024 elements) that one segment covers whole is sent as it stands and
   * rounded where it is next used; one covered in part is rounded in place. With 4 KiB segments (2048 16-bit
   * values) a good part of the tiles take the second path, with 1 MiB segments almost none. Both must give the
   * same bits: 16-bit data and F32 data on a bfloat16 wire, sums, averages and maxima; where the arithmetic
   * allows (maxima, DIRECT sums and two ranks' sums), the exact result too. HIERARCHICAL: two processes of three
   * ranks, which read each other's values in place.
   */
  @ParameterizedTest(name = "{0} data {1} on {2} ranks")
  @CsvSource({"F16, RING, 2", "BF16, RING, 3", "F32, RING, 2", "F32, RING, 3", "F32, RING, 4", "F16, DIRECT, 3",
      "F32, DIRECT, 4", "BF16, HALVING_DOUBLING, 4", "F32, HALVING_DOUBLING, 3", "F32, HALVING_DOUBLING, 4",
      "F16, HIERARCHICAL, 6", "F32, HIERARCHICAL, 6", "F32, RECURSIVE_DOUBLING, 4", "BF16, RECURSIVE_DOUBLING, 3",
      "F16, RECURSIVE_DOUBLING, 5"})
  void shouldGiveTheSameBitsWhetherSegmentsCoverTheRoundingTilesWholeOrNot(DType dtype, Algorithm algorithm, int n) {
    int[] nodes = new int[n];
    for (int r = 0; r < n; r++) {
      nodes[r] = algorithm == Algorithm.HIERARCHICAL ? r / 3 : r;
    }
    LocalGroup tiny = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096",
        CollectiveConfig.RING_MIN_BYTES, "0")), t -> new NodeMapTransport(t, nodes));
    LocalGroup large = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES,
        String.valueOf(1 << 20), CollectiveConfig.RING_MIN_BYTES, "0")), t -> new NodeMapTransport(t, nodes));
    // Long enough that the ring between the two processes of HIERARCHICAL sends whole tiles too.
    int len = (algorithm == Algorithm.HIERARCHICAL ? 20 : 5) * 4096 + 123;
    DType half = dtype == DType.F32 ? DType.BF16 : dtype;
    CollectiveOptions options = dtype == DType.F32 ? CollectiveOptions.DEFAULT.withWireType(DType.BF16)
        : CollectiveOptions.DEFAULT;
    try {
      double[][] in = new double[n][];
      for (int r = 0; r < n; r++) {
        in[r] = inputs(half, r, len);
      }
      for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX}) {
        String where = dtype + " " + algorithm + " " + op + " on " + n + " ranks";
        CollectiveOptions o = options.withAlgorithm(algorithm);
        List<short[]> eager = dtype == DType.F32 ? allReduceFloats(tiny, len, op, o)
            : allReduce(tiny, dtype, len, op, o);
        List<short[]> deferred = dtype == DType.F32 ? allReduceFloats(large, len, op, o)
            : allReduce(large, dtype, len, op, o);
        for (int r = 0; r < n; r++) {
          assertArrayEquals(eager.get(0), eager.get(r), where + ": rank " + r + " differs (4 KiB segments)");
          assertArrayEquals(eager.get(0), deferred.get(r), where + ": rank " + r + " with 1 MiB segments differs from "
              + "4 KiB segments");
        }
        if (op == ReduceOp.MAX || op == ReduceOp.SUM && (algorithm == Algorithm.DIRECT || n == 2)) {
          long[] exact = Reference.reduceExactFloats(half, op, in);
          for (int i = 0; i < len; i++) {
            assertEquals(Double.longBitsToDouble(exact[i]), value(half, deferred.get(0)[i]), 0,
                where + " element " + i + " against the exact result");
          }
        }
      }
    } finally {
      GroupHarness.closeAll(tiny);
      GroupHarness.closeAll(large);
    }
  }

  /** F32 inputs of bfloat16 values, all-reduced as F32 data; the results' bfloat16 bits (their top halves). */
  private static List<short[]> allReduceFloats(LocalGroup group, int len, ReduceOp op, CollectiveOptions options) {
    return GroupHarness.run(group, LIMIT, comm -> {
      double[] v = inputs(DType.BF16, comm.rank(), len);
      float[] a = new float[len];
      for (int i = 0; i < len; i++) {
        a[i] = (float) v[i];
      }
      comm.allReduce(DataBuffer.of(a), op, options);
      short[] top = new short[len];
      for (int i = 0; i < len; i++) {
        int bits = Float.floatToRawIntBits(a[i]);
        assertEquals(0, bits & 0xFFFF, "element " + i + " of rank " + comm.rank() + " is not a bfloat16 value");
        top[i] = (short) (bits >>> 16);
      }
      return top;
    });
  }

  /**
   * Hierarchical: ranks of one process read each other's F32 values in place, pieces of the vector cut across the
   * 1024-element rounding tiles; every rank ends with the same bits, the same in every run, within the bound.
   */
  @Test
  void shouldGiveEveryRankTheSameBitsThroughTheHierarchicalAlgorithm() {
    int[] nodes = {0, 0, 0, 1, 1, 1};
    int n = nodes.length;
    int len = 50_001;
    LocalGroup group = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES,
        "4096", CollectiveConfig.RING_MIN_BYTES, "0")), t -> new NodeMapTransport(t, nodes));
    try {
      for (DType dtype : new DType[] {DType.F16, DType.BF16}) {
        double u = dtype == DType.F16 ? 0x1p-11 : 0x1p-8;
        double[][] in = new double[n][];
        for (int r = 0; r < n; r++) {
          in[r] = inputs(dtype, r, len);
        }
        long[] exact = Reference.reduceExactFloats(dtype, ReduceOp.SUM, in);
        short[] first = null;
        for (int run = 0; run < 5; run++) {
          List<short[]> out = allReduce(group, dtype, len, ReduceOp.SUM,
              CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.HIERARCHICAL));
          for (short[] r : out) {
            assertArrayEquals(out.get(0), r, dtype + " run " + run + ": ranks differ");
          }
          first = first == null ? out.get(0) : first;
          assertArrayEquals(first, out.get(0), dtype + ": run " + run + " differs from run 0");
        }
        for (int i = 0; i < len; i++) {
          double want = Double.longBitsToDouble(exact[i]);
          double magnitude = 0;
          for (double[] x : in) {
            magnitude += Math.abs(x[i]);
          }
          double got = value(dtype, first[i]);
          assertTrue(Math.abs(got - want) <= (n - 1) * u * magnitude + u * Math.abs(want),
              dtype + " element " + i + ": " + got + " vs " + want);
        }
      }
      // F32 data with bfloat16 on the wire, whose rounding changes the inputs: the same bits in every run too.
      float[] first = null;
      for (int run = 0; run < 20; run++) {
        List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
          SplittableRandom rnd = new SplittableRandom(comm.rank());
          float[] x = new float[len];
          for (int i = 0; i < len; i++) {
            x[i] = (float) rnd.nextGaussian();
          }
          comm.allReduce(DataBuffer.of(x), ReduceOp.SUM,
              CollectiveOptions.DEFAULT.withWireType(DType.BF16).withAlgorithm(Algorithm.HIERARCHICAL));
          return x;
        });
        for (float[] r : out) {
          assertArrayEquals(out.get(0), r, "F32 on a BF16 wire, run " + run + ": ranks differ");
        }
        first = first == null ? out.get(0) : first;
        assertArrayEquals(first, out.get(0), "F32 on a BF16 wire: run " + run + " differs from run 0");
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  /** Reduce-scatter: each rank's block within the bound of the exact sum; the exact mode exact. */
  @Test
  void shouldReduceScatterInSixteenBitsByDefaultAndExactlyInTheExactMode() {
    int n = 4;
    int len = 10_003;
    LocalGroup group = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")),
        UnaryOperator.identity());
    try {
      for (DType dtype : new DType[] {DType.F16, DType.BF16}) {
        double[][] in = new double[n][];
        for (int r = 0; r < n; r++) {
          in[r] = inputs(dtype, r, len);
        }
        long[] exact = Reference.reduceExactFloats(dtype, ReduceOp.SUM, in);
        double u = dtype == DType.F16 ? 0x1p-11 : 0x1p-8;
        for (CollectiveOptions options : new CollectiveOptions[] {CollectiveOptions.DEFAULT, EXACT}) {
          List<short[]> out = GroupHarness.run(group, LIMIT, comm -> {
            ByteBuffer b = buffer(bits(dtype, inputs(dtype, comm.rank(), len)));
            comm.reduceScatter(DataBuffer.of(b, dtype), ReduceOp.SUM, options);
            return read(b);
          });
          int differ = 0;
          for (int r = 0; r < n; r++) {
            int from = r * (len / n) + Math.min(r, len % n);
            int to = from + len / n + (r < len % n ? 1 : 0);
            for (int i = from; i < to; i++) {
              double want = Double.longBitsToDouble(exact[i]);
              double got = value(dtype, out.get(r)[i]);
              if (options == EXACT) {
                assertEquals(want, got, 0, dtype + " exact: rank " + r + " element " + i);
              } else {
                double magnitude = 0;
                for (double[] x : in) {
                  magnitude += Math.abs(x[i]);
                }
                assertTrue(Math.abs(got - want) <= (n - 1) * u * magnitude + u * Math.abs(want),
                    dtype + ": rank " + r + " element " + i + ": " + got + " vs " + want);
                differ += got != want ? 1 : 0;
              }
            }
          }
          if (options != EXACT) {
            assertTrue(differ > 0, dtype + ": no partial sum was rounded on the way");
          }
        }
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldRefuseAnF32WireForOtherTypesAndFailBothRanksWhenTheirModesDiffer() {
    LocalGroup group = LocalGroup.create(2);
    try {
      List<String> errors = GroupHarness.run(group, LIMIT, comm -> {
        CollectiveUsageException notHalf = assertThrows(CollectiveUsageException.class,
            () -> comm.allReduce(DataBuffer.of(new double[4]), ReduceOp.SUM, EXACT));
        CollectiveUsageException bf16OfF16 = assertThrows(CollectiveUsageException.class,
            () -> comm.allReduce(DataBuffer.of(ByteBuffer.allocate(8), DType.F16), ReduceOp.SUM,
                CollectiveOptions.DEFAULT.withWireType(DType.BF16)));
        CollectiveOptions mine = comm.rank() == 0 ? EXACT : CollectiveOptions.DEFAULT;
        CollectiveException mismatch = assertThrows(CollectiveException.class,
            () -> comm.allReduce(DataBuffer.of(ByteBuffer.allocate(128), DType.F16), ReduceOp.SUM, mine));
        return notHalf.getMessage() + " | " + bf16OfF16.getMessage() + " | " + mismatch.getMessage();
      });
      for (String e : errors) {
        assertTrue(e.contains("is for F16 and BF16 data, got F64"), e);
        assertTrue(e.contains("needs F32 data, got F16"), e);
        assertTrue(e.contains("F16 in 16 bits on the wire"), e);
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }
}
