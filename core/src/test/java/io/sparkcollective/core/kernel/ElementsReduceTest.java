package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
   * The array indexed like the vector (for a wire buffer on the heap) is sized to the whole vector by the first
   * segment folded, so later segments at higher indices reuse it (one allocation, not one per new highest index);
   * a vector that ends past the limit never gets one, not even for segments that lie below it (they are staged).
   * From a direct wire buffer a float vector folds the segment where it lies and needs no such array.
   */
  @Test
  void shouldSizeTheInPlaceArrayToTheWholeVectorOnceAndSkipItAboveTheLimit() {
    SplittableRandom rnd = new SplittableRandom(7);
    Scratch scratch = new Scratch();
    scratch.alignedMax(BASE + LENGTH);
    float[] f = floats(rnd, BASE + LENGTH);
    fold(DataBuffer.of(f, BASE, LENGTH), DataBuffer.of(floats(rnd, N)), ReduceOp.SUM, scratch, false);
    float[] aligned = scratch.alignedFloats(0);
    assertEquals(BASE + LENGTH, aligned.length);

    Scratch over = new Scratch();
    over.alignedMax(BASE + LENGTH - 1);
    float[] g = floats(rnd, BASE + LENGTH);
    float[] gIn = floats(rnd, N);
    float[] want = foldedAt(g, BASE + OFF, gIn);
    fold(DataBuffer.of(g, BASE, LENGTH), DataBuffer.of(gIn), ReduceOp.SUM, over, false);
    assertArrayEquals(want, g);
    assertEquals(0, over.alignedFloats(0).length);

    Scratch direct = new Scratch();
    float[] h = floats(rnd, BASE + LENGTH);
    float[] hIn = floats(rnd, N);
    float[] wantH = foldedAt(h, BASE + OFF, hIn);
    fold(DataBuffer.of(h, BASE, LENGTH), DataBuffer.of(hIn), ReduceOp.SUM, direct, true);
    assertArrayEquals(wantH, h);
    assertEquals(OffHeapKernels.AVAILABLE ? 0 : BASE + LENGTH, direct.alignedFloats(0).length,
        "array indexed like the vector after a fold from a direct wire buffer");
  }

  /**
   * A little-endian buffer (the wire's order; direct or heap) is the vector itself: a folded segment is in it at
   * once, before any commit, with no working copy of the whole vector; a big-endian one is staged and holds the
   * result after the commit. Reads, writes and AVG's division work on the buffer in place too.
   */
  @ParameterizedTest
  @EnumSource(value = DType.class, names = {"F32", "F64", "I32", "I64"})
  void shouldUseALittleEndianBufferInPlace(DType dtype) {
    SplittableRandom rnd = new SplittableRandom(dtype.ordinal());
    for (String form : new String[] {"direct", "heap", "big-endian"}) {
      ByteBuffer b = (form.equals("direct") ? ByteBuffer.allocateDirect(LENGTH * 8) : ByteBuffer.allocate(LENGTH * 8))
          .order(form.equals("big-endian") ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN);
      double[] want = new double[LENGTH];
      for (int k = 0; k < LENGTH; k++) {
        want[k] = rnd.nextInt(-1000, 1000);
        put(b, dtype, k, want[k]);
      }
      double[] in = new double[N];
      ByteBuffer inBytes = ByteBuffer.allocate(N * 8).order(ByteOrder.LITTLE_ENDIAN);
      for (int k = 0; k < N; k++) {
        in[k] = rnd.nextInt(-1000, 1000);
        put(inBytes, dtype, k, in[k]);
        want[OFF + k] += in[k];
      }
      Scratch scratch = new Scratch();
      WireBuffer wire = new WireBuffer(N * 8, true);
      Elements.open(DataBuffer.of(inBytes.limit(N * dtype.byteSize()), dtype), new Scratch(), 0).write(0, N, wire);
      DataBuffer data = DataBuffer.of(b.limit(LENGTH * dtype.byteSize()), dtype);
      Elements el = Elements.open(data, scratch, 0);
      el.reduce(OFF, N, wire, ReduceOp.SUM, scratch);
      boolean inPlace = !form.equals("big-endian");
      if (inPlace) {
        for (int k = 0; k < LENGTH; k++) {
          assertEquals(want[k], get(b, dtype, k), form + " element " + k + " before any commit");
        }
      }
      // A segment read from the wire overwrites its range; writing it back out gives the same bytes.
      el.read(0, 5, wire);
      for (int k = 0; k < 5; k++) {
        want[k] = in[k];
      }
      WireBuffer out = new WireBuffer(LENGTH * 8, true);
      el.write(0, LENGTH, out);
      if (dtype == DType.F32 || dtype == DType.F64) {
        el.divide(0, LENGTH, 4);
        for (int k = 0; k < LENGTH; k++) {
          want[k] /= 4;
        }
      }
      el.commit();
      for (int k = 0; k < LENGTH; k++) {
        assertEquals(want[k], get(b, dtype, k), form + " element " + k);
        ByteBuffer ob = out.bytes().duplicate().order(ByteOrder.LITTLE_ENDIAN);
        double sent = dtype == DType.F32 ? ob.getFloat(4 * k) : dtype == DType.F64 ? ob.getDouble(8 * k)
            : dtype == DType.I32 ? ob.getInt(4 * k) : ob.getLong(8 * k);
        double before = dtype == DType.F32 || dtype == DType.F64 ? want[k] * 4 : want[k];
        assertEquals(before, sent, form + " element " + k + " as written to the wire");
      }
      assertEquals(inPlace ? 0 : LENGTH, scratch.workLength(dtype), form + ": working copy of the vector");
    }
  }

  private static void put(ByteBuffer b, DType dtype, int k, double v) {
    switch (dtype) {
      case F32:
        b.putFloat(4 * k, (float) v);
        break;
      case F64:
        b.putDouble(8 * k, v);
        break;
      case I32:
        b.putInt(4 * k, (int) v);
        break;
      default:
        b.putLong(8 * k, (long) v);
    }
  }

  private static double get(ByteBuffer b, DType dtype, int k) {
    switch (dtype) {
      case F32:
        return b.getFloat(4 * k);
      case F64:
        return b.getDouble(8 * k);
      case I32:
        return b.getInt(4 * k);
      default:
        return b.getLong(8 * k);
    }
  }

  /** Puts {@code in} on a wire buffer as a peer would, then folds it into {@code [OFF, OFF+N)} of {@code into}. */
  private static void fold(DataBuffer into, DataBuffer in, ReduceOp op, Scratch scratch) {
    fold(into, in, op, scratch, true);
  }

  private static void fold(DataBuffer into, DataBuffer in, ReduceOp op, Scratch scratch, boolean directWire) {
    Elements src = Elements.open(in, new Scratch(), 0);
    WireBuffer wire = new WireBuffer(N * 8, directWire);
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

  /** A copy of {@code a} with {@code in} added element by element from index {@code at}: the fold's reference. */
  private static float[] foldedAt(float[] a, int at, float[] in) {
    float[] want = a.clone();
    for (int k = 0; k < in.length; k++) {
      want[at + k] += in[k];
    }
    return want;
  }

  private static float[] floats(SplittableRandom rnd, int n) {
    float[] a = new float[n];
    for (int k = 0; k < n; k++) {
      a[k] = (float) rnd.nextDouble(-4, 4);
    }
    return a;
  }
}
