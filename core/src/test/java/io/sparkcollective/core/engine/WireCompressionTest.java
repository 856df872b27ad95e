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
import io.sparkcollective.core.testing.GroupHarness;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** F32 all-reduce with bfloat16 on the wire: same bits on every rank, within bfloat16 error of the exact sum. */
@Timeout(300)
class WireCompressionTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);
  private static final CollectiveOptions BF16 = CollectiveOptions.DEFAULT.withWireType(DType.BF16);

  private static float[] input(int rank, int len) {
    SplittableRandom rnd = new SplittableRandom(31L * rank + len);
    float[] a = new float[len];
    for (int i = 0; i < len; i++) {
      a[i] = (float) rnd.nextGaussian();
    }
    return a;
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4, 5, 8, 9})
  void shouldGiveEveryRankTheSameBitsWithinBf16ErrorOfTheExactSum(int n) {
    LocalGroup group = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")),
        UnaryOperator.identity());
    try {
      for (Algorithm algorithm : new Algorithm[] {Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING,
          Algorithm.RECURSIVE_DOUBLING}) {
        for (int len : new int[] {0, 1, n + 1, 3001, 20_011}) {
          for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX}) {
            List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
              float[] a = input(comm.rank(), len);
              comm.allReduce(DataBuffer.of(a), op, BF16.withAlgorithm(algorithm));
              return a;
            });
            String where = algorithm + " " + op + " n=" + n + " len=" + len;
            for (float[] r : out) {
              assertArrayEquals(out.get(0), r, where + ": ranks differ");
            }
            float[][] inputs = new float[n][];
            for (int r = 0; r < n; r++) {
              inputs[r] = input(r, len);
            }
            for (int i = 0; i < len; i++) {
              double exact = op == ReduceOp.MAX ? Double.NEGATIVE_INFINITY : 0;
              double magnitude = 0;
              for (int r = 0; r < n; r++) {
                double x = inputs[r][i];
                exact = op == ReduceOp.MAX ? Math.max(exact, x) : exact + x;
                magnitude += Math.abs(x);
              }
              if (op == ReduceOp.AVG) {
                exact /= n;
                magnitude /= n;
              }
              float got = out.get(0)[i];
              // Each of up to n roundings to 8 significant bits costs at most 2^-8 of the running magnitude.
              double bound = (n + 1) * Math.scalb(1.0, -8) * magnitude + 1e-30;
              assertTrue(Math.abs(got - exact) <= bound, where + " element " + i + ": " + got + " vs " + exact);
              if (n > 1) {
                // The result is a bfloat16 value: its low 16 bits are zero (a group of one sends nothing).
                assertEquals(0, Float.floatToRawIntBits(got) & 0xFFFF, where + " element " + i + " not bf16");
              }
            }
          }
        }
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldCompressF32ByteBuffersToo() {
    LocalGroup group = LocalGroup.create(3);
    try {
      List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
        float[] a = input(comm.rank(), 1000);
        ByteBuffer b = ByteBuffer.allocateDirect(4000).order(ByteOrder.nativeOrder());
        b.asFloatBuffer().put(a);
        comm.allReduce(DataBuffer.of(b, DType.F32), ReduceOp.SUM, BF16);
        float[] r = new float[1000];
        b.asFloatBuffer().get(r);
        // The same call on an array gives the same bits.
        comm.allReduce(DataBuffer.of(a), ReduceOp.SUM, BF16);
        assertArrayEquals(a, r);
        return r;
      });
      assertArrayEquals(out.get(0), out.get(2));
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldRefuseWhatItCannotCompressAndRanksThatDisagree() {
    assertThrows(CollectiveUsageException.class, () -> CollectiveOptions.DEFAULT.withWireType(DType.F16));
    LocalGroup group = LocalGroup.create(2);
    try {
      List<String> errors = GroupHarness.run(group, LIMIT, comm -> {
        CollectiveUsageException notF32 = assertThrows(CollectiveUsageException.class,
            () -> comm.allReduce(DataBuffer.of(new double[4]), ReduceOp.SUM, BF16));
        CollectiveUsageException notAllReduce = assertThrows(CollectiveUsageException.class,
            () -> comm.broadcast(DataBuffer.of(new float[4]), 0, BF16));
        // Local argument errors leave the group usable; a rank without compression is a mismatch on both.
        CollectiveOptions mine = comm.rank() == 0 ? BF16 : CollectiveOptions.DEFAULT;
        // The rank that sees the other's frame first throws the mismatch; the other may hear of it by ABORT.
        CollectiveException mismatch = assertThrows(CollectiveException.class,
            () -> comm.allReduce(DataBuffer.of(new float[64]), ReduceOp.SUM, mine));
        return notF32.getMessage() + " | " + notAllReduce.getMessage() + " | " + mismatch.getMessage();
      });
      for (String e : errors) {
        assertTrue(e.contains("needs F32 data, got F64"), e);
        assertTrue(e.contains("applies to allReduce and reduceScatter only"), e);
        assertTrue(e.contains("BF16 on the wire"), e);
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }
}
