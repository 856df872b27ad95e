package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A received segment folded into a vector: in place at the vector's own indices (vectors up to
 * {@link Scratch#ALIGNED_MAX_ELEMENTS}) and through segment-sized staging (longer ones, forced here by a
 * lower limit) give what an element-by-element loop gives, for every element type, at ranges that start
 * anywhere in an array whose data itself starts at an offset.
 */
@Timeout(60)
class ElementsReduceTest {
  private static final int BASE = 3;
  private static final int LENGTH = 1000;
  private static final int OFF = 123;
  private static final int N = 517;

  @ParameterizedTest
  @EnumSource(value = ReduceOp.class, names = {"SUM", "PROD", "MIN", "MAX"})
  void shouldFoldAReceivedSegmentInPlaceOrStagedAlike(ReduceOp op) {
    SplittableRandom rnd = new SplittableRandom(op.ordinal());
    for (boolean staged : new boolean[] {false, true}) {
      Scratch scratch = new Scratch();
      if (staged) {
        scratch.alignedMax(0);
      }
      float[] f = floats(rnd, BASE + LENGTH);
      float[] fIn = floats(rnd, N);
      double[] d = rnd.doubles(BASE + LENGTH, -4, 4).toArray();
      double[] dIn = rnd.doubles(N, -4, 4).toArray();
      int[] i = rnd.ints(BASE + LENGTH).toArray();
      int[] iIn = rnd.ints(N).toArray();
      long[] l = rnd.longs(BASE + LENGTH).toArray();
      long[] lIn = rnd.longs(N).toArray();

      float[] fWant = f.clone();
      double[] dWant = d.clone();
      int[] iWant = i.clone();
      long[] lWant = l.clone();
      for (int k = 0; k < N; k++) {
        int x = BASE + OFF + k;
        fWant[x] = (float) apply(op, fWant[x], fIn[k]);
        dWant[x] = apply(op, dWant[x], dIn[k]);
        iWant[x] = (int) apply(op, iWant[x], iIn[k]);
        lWant[x] = apply(op, lWant[x], lIn[k]);
      }

      fold(DataBuffer.of(f, BASE, LENGTH), DataBuffer.of(fIn), op, scratch);
      fold(DataBuffer.of(d, BASE, LENGTH), DataBuffer.of(dIn), op, scratch);
      fold(DataBuffer.of(i, BASE, LENGTH), DataBuffer.of(iIn), op, scratch);
      fold(DataBuffer.of(l, BASE, LENGTH), DataBuffer.of(lIn), op, scratch);
      String how = op + (staged ? " staged" : " in place");
      assertArrayEquals(fWant, f, how);
      assertArrayEquals(dWant, d, how);
      assertArrayEquals(iWant, i, how);
      assertArrayEquals(lWant, l, how);
    }
  }

  /**
   * The array indexed like the vector is sized to the whole vector by the first segment folded, so later
   * segments at higher indices reuse it (one allocation, not one per new highest index); a vector that ends
   * past the limit never gets one, not even for segments that lie below it (they are staged).
   */
  @Test
  void shouldSizeTheInPlaceArrayToTheWholeVectorOnceAndSkipItAboveTheLimit() {
    SplittableRandom rnd = new SplittableRandom(7);
    Scratch scratch = new Scratch();
    scratch.alignedMax(BASE + LENGTH);
    float[] f = floats(rnd, BASE + LENGTH);
    fold(DataBuffer.of(f, BASE, LENGTH), DataBuffer.of(floats(rnd, N)), ReduceOp.SUM, scratch);
    float[] aligned = scratch.alignedFloats(0);
    assertEquals(BASE + LENGTH, aligned.length);

    Scratch over = new Scratch();
    over.alignedMax(BASE + LENGTH - 1);
    float[] g = floats(rnd, BASE + LENGTH);
    float[] gIn = floats(rnd, N);
    float[] want = g.clone();
    for (int k = 0; k < N; k++) {
      want[BASE + OFF + k] += gIn[k];
    }
    fold(DataBuffer.of(g, BASE, LENGTH), DataBuffer.of(gIn), ReduceOp.SUM, over);
    assertArrayEquals(want, g);
    assertEquals(0, over.alignedFloats(0).length);
  }

  /** Puts {@code in} on a wire buffer as a peer would, then folds it into {@code [OFF, OFF+N)} of {@code into}. */
  private static void fold(DataBuffer into, DataBuffer in, ReduceOp op, Scratch scratch) {
    Elements src = Elements.open(in, new Scratch(), 0);
    WireBuffer wire = new WireBuffer(N * 8, true);
    src.write(0, N, wire);
    Elements.open(into, scratch, 0).reduce(OFF, N, wire, op, scratch);
  }

  private static double apply(ReduceOp op, double a, double b) {
    switch (op) {
      case SUM:
        return a + b;
      case PROD:
        return a * b;
      case MIN:
        return Math.min(a, b);
      default:
        return Math.max(a, b);
    }
  }

  private static long apply(ReduceOp op, long a, long b) {
    switch (op) {
      case SUM:
        return a + b;
      case PROD:
        return a * b;
      case MIN:
        return Math.min(a, b);
      default:
        return Math.max(a, b);
    }
  }

  private static float[] floats(SplittableRandom rnd, int n) {
    float[] a = new float[n];
    for (int k = 0; k < n; k++) {
      a[k] = (float) rnd.nextDouble(-4, 4);
    }
    return a;
  }
}
