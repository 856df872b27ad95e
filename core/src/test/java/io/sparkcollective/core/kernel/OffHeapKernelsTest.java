package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
 * Vectors in direct buffers are combined where they lie ({@link OffHeapKernels}): a received segment folded in, a
 * vector of another rank of the process folded in, AVG's division. Each result is checked element by element
 * against the same Java operation on the values read back one at a time (bit for bit; a NaN where the reference
 * has one), for every element type and operator, on operands that include NaNs, infinities, signed zeros and
 * the integer extremes, at ranges that start anywhere in buffers that are slices of larger ones and span several
 * of the tiles the kernels stage through ({@link OffHeapKernels#TILE_BYTES}), the last one partial.
 */
@Timeout(60)
class OffHeapKernelsTest {
  private static final int LENGTH = 3000;
  private static final int OFF = 123;
  /** Two tiles of 32-bit elements and a part of a third (four and a part of 64-bit ones). */
  private static final int N = 2 * OffHeapKernels.TILE_BYTES / 4 + 517;
  /** The vectors are slices starting this many bytes into their memory. */
  private static final int SLICE = 24;

  @Test
  void shouldCombineInPlaceOnTheJdksWhereUnsafeMemoryAccessDoesNotWarn() {
    boolean expected = Runtime.version().feature() <= 22 && !Boolean.getBoolean(OffHeapKernels.DISABLE_PROPERTY);
    assertEquals(expected, OffHeapKernels.AVAILABLE, "off-heap kernels on JDK " + Runtime.version());
    assertEquals(expected, buffer(DType.F32, ByteBuffer.allocateDirect(LENGTH * 4)).combinesInPlace());
    // Heap buffers have no address: they keep to the staged path.
    assertFalse(buffer(DType.F32, ByteBuffer.allocate(LENGTH * 4)).combinesInPlace());
  }

  @ParameterizedTest
  @EnumSource(value = DType.class, names = {"F32", "F64", "I32", "I64"})
  void shouldFoldAReceivedSegmentAndAPeersVectorAsTheJavaOperationDoes(DType dtype) {
    for (ReduceOp op : ReduceOp.values()) {
      SplittableRandom rnd = new SplittableRandom(31L * dtype.ordinal() + op.ordinal());
      ByteBuffer mine = filled(dtype, LENGTH, rnd);
      ByteBuffer theirs = filled(dtype, LENGTH, rnd);
      ByteBuffer received = filled(dtype, N, rnd);
      ByteBuffer before = copy(mine);

      Scratch scratch = new Scratch();
      Elements.BufferElements el = buffer(dtype, mine);
      WireBuffer wire = new WireBuffer(N * dtype.byteSize() + 64, true);
      wire.start(16);
      wire.view(N * dtype.byteSize()).put(received.duplicate().clear());
      el.reduce(OFF, N, wire, op, scratch);
      for (int k = 0; k < LENGTH; k++) {
        boolean in = k >= OFF && k < OFF + N;
        long was = bits(dtype, before, k);
        long want = in ? apply(dtype, op, was, bits(dtype, received, k - OFF)) : was;
        check(dtype, want, bits(dtype, mine, k), op + " received segment, element " + k);
      }

      ByteBuffer afterFirst = copy(mine);
      el.reduceFrom(buffer(dtype, theirs), OFF / 2, N, op, scratch);
      for (int k = 0; k < LENGTH; k++) {
        boolean in = k >= OFF / 2 && k < OFF / 2 + N;
        long was = bits(dtype, afterFirst, k);
        long want = in ? apply(dtype, op, was, bits(dtype, theirs, k)) : was;
        check(dtype, want, bits(dtype, mine, k), op + " peer's vector, element " + k);
      }
    }
  }

  /**
   * A vector in an array folds a received segment from a direct wire buffer where it lies, tile by tile; from a
   * wire buffer on the heap it copies the segment first. Both give the Java operation's bits, at a range that
   * starts anywhere in the vector and in the wire buffer.
   */
  @ParameterizedTest
  @EnumSource(value = DType.class, names = {"F32", "F64"})
  void shouldFoldAReceivedSegmentIntoAnArrayAsTheJavaOperationDoes(DType dtype) {
    for (boolean directWire : new boolean[] {true, false}) {
      for (ReduceOp op : ReduceOp.values()) {
        int length = LENGTH;
        SplittableRandom rnd = new SplittableRandom(17L * dtype.ordinal() + op.ordinal() + (directWire ? 1 : 0));
        ByteBuffer initial = filled(dtype, length, rnd);
        ByteBuffer received = filled(dtype, N, rnd);
        int off = length - N - 11;
        Object array;
        if (dtype == DType.F32) {
          float[] a = new float[length];
          initial.asFloatBuffer().get(a);
          array = a;
        } else {
          double[] a = new double[length];
          initial.asDoubleBuffer().get(a);
          array = a;
        }
        Elements el = Elements.open(dtype == DType.F32 ? DataBuffer.of((float[]) array)
            : DataBuffer.of((double[]) array), new Scratch(), 0);
        WireBuffer wire = new WireBuffer(N * dtype.byteSize() + 64, directWire);
        wire.start(24);
        wire.view(N * dtype.byteSize()).put(received.duplicate().clear());
        el.reduce(off, N, wire, op, new Scratch());
        for (int k = 0; k < length; k++) {
          long was = bits(dtype, initial, k);
          long want = k >= off && k < off + N ? apply(dtype, op, was, bits(dtype, received, k - off)) : was;
          long got = dtype == DType.F32 ? Float.floatToRawIntBits(((float[]) array)[k])
              : Double.doubleToRawLongBits(((double[]) array)[k]);
          if (want != got) {
            check(dtype, want, got, op + " into an array from a " + (directWire ? "direct" : "heap")
                + " wire buffer, element " + k);
          }
        }
      }
    }
  }

  @ParameterizedTest
  @EnumSource(value = DType.class, names = {"F32", "F64", "I32", "I64"})
  void shouldDivideInPlaceAsTheJavaOperationDoes(DType dtype) {
    SplittableRandom rnd = new SplittableRandom(dtype.ordinal());
    ByteBuffer mine = filled(dtype, LENGTH, rnd);
    ByteBuffer before = copy(mine);
    buffer(dtype, mine).divide(OFF, N, 7);
    for (int k = 0; k < LENGTH; k++) {
      long b = bits(dtype, before, k);
      long want = k < OFF || k >= OFF + N ? b
          : dtype == DType.F32 ? Float.floatToRawIntBits(Float.intBitsToFloat((int) b) / 7f)
          : dtype == DType.F64 ? Double.doubleToRawLongBits(Double.longBitsToDouble(b) / 7d)
          : dtype == DType.I32 ? (int) b / 7 : b / 7;
      check(dtype, want, bits(dtype, mine, k), "divided, element " + k);
    }
  }

  @Test
  void shouldRefuseRangesOutsideEitherVector() {
    ByteBuffer mine = ByteBuffer.allocateDirect(LENGTH * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (int k = 0; k < LENGTH; k++) {
      mine.putFloat(4 * k, 1f);
    }
    Elements.BufferElements el = buffer(DType.F32, mine);
    Elements.BufferElements shorter = buffer(DType.F32, ByteBuffer.allocateDirect(LENGTH * 2));
    Scratch scratch = new Scratch();
    assertThrows(RuntimeException.class,
        () -> el.reduceFrom(shorter, LENGTH / 2, LENGTH / 2, ReduceOp.SUM, scratch));
    Elements.BufferElements same = buffer(DType.F32, ByteBuffer.allocateDirect(LENGTH * 4));
    assertThrows(RuntimeException.class, () -> el.reduceFrom(same, LENGTH - 10, 11, ReduceOp.SUM, scratch));
    WireBuffer small = new WireBuffer(64, true);
    assertThrows(RuntimeException.class, () -> el.reduce(0, 17, small, ReduceOp.SUM, scratch));
    assertThrows(RuntimeException.class, () -> el.divide(LENGTH - 1, 2, 3));
    for (int k = 0; k < LENGTH; k++) {
      assertEquals(1f, mine.getFloat(4 * k), "element " + k + " after refused calls");
    }
  }

  /** Copies into an array are not bounds-checked by the JVM: a range outside the array is refused, nothing written. */
  @Test
  void shouldRefuseToFoldARangeOutsideTheArray() {
    org.junit.jupiter.api.Assumptions.assumeTrue(OffHeapKernels.AVAILABLE, "off-heap kernels on this JVM");
    ByteBuffer src = ByteBuffer.allocateDirect(LENGTH * 8).order(ByteOrder.LITTLE_ENDIAN);
    long at = OffHeapKernels.address(src);
    float[] f = new float[LENGTH];
    double[] d = new double[LENGTH];
    for (int[] range : new int[][] {{LENGTH - 10, 11}, {-1, 5}, {0, -1}, {Integer.MAX_VALUE - 2, 10}}) {
      assertThrows(ArrayIndexOutOfBoundsException.class,
          () -> OffHeapKernels.reduceIntoArray(f, range[0], at, range[1], ReduceOp.SUM), "float " + range[0]);
      assertThrows(ArrayIndexOutOfBoundsException.class,
          () -> OffHeapKernels.reduceIntoArray(d, range[0], at, range[1], ReduceOp.SUM), "double " + range[0]);
    }
    assertTrue(OffHeapKernels.reduceIntoArray(f, LENGTH - 10, at, 10, ReduceOp.SUM));
    java.lang.ref.Reference.reachabilityFence(src);
  }

  /** {@code memory}, its whole capacity, as a little-endian vector of {@code dtype}. */
  private static Elements.BufferElements buffer(DType dtype, ByteBuffer memory) {
    int n = memory.capacity() / dtype.byteSize();
    ByteBuffer view = memory.duplicate().clear().limit(n * dtype.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
    DataBuffer data = DataBuffer.of(view, dtype);
    Elements e = Elements.open(data, new Scratch(), 0);
    assertTrue(e instanceof Elements.BufferElements, dtype + " in a little-endian buffer is used in place");
    return (Elements.BufferElements) e;
  }

  /** A slice, {@link #SLICE} bytes into direct memory, of {@code n} elements drawn to include special values. */
  private static ByteBuffer filled(DType dtype, int n, SplittableRandom rnd) {
    ByteBuffer b = ByteBuffer.allocateDirect(SLICE + n * dtype.byteSize()).position(SLICE).slice()
        .order(ByteOrder.LITTLE_ENDIAN);
    for (int k = 0; k < n; k++) {
      int pick = rnd.nextInt(16);
      switch (dtype) {
        case F32: {
          float[] special = {Float.NaN, Float.intBitsToFloat(0x7fc01234), -0f, 0f, Float.POSITIVE_INFINITY,
              Float.NEGATIVE_INFINITY, Float.MIN_VALUE, Float.MAX_VALUE};
          b.putFloat(4 * k, pick < special.length ? special[pick] : (float) rnd.nextDouble(-1e3, 1e3));
          break;
        }
        case F64: {
          double[] special = {Double.NaN, -0d, 0d, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY,
              Double.MIN_VALUE, Double.MAX_VALUE};
          b.putDouble(8 * k, pick < special.length ? special[pick] : rnd.nextDouble(-1e3, 1e3));
          break;
        }
        case I32: {
          int[] special = {Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1};
          b.putInt(4 * k, pick < special.length ? special[pick] : rnd.nextInt());
          break;
        }
        default: {
          long[] special = {Long.MIN_VALUE, Long.MAX_VALUE, 0, -1};
          b.putLong(8 * k, pick < special.length ? special[pick] : rnd.nextLong());
        }
      }
    }
    return b;
  }

  private static ByteBuffer copy(ByteBuffer b) {
    ByteBuffer c = ByteBuffer.allocate(b.capacity()).order(ByteOrder.LITTLE_ENDIAN);
    c.put(b.duplicate().clear());
    return c.clear();
  }

  private static long bits(DType dtype, ByteBuffer b, int k) {
    return dtype.byteSize() == 4 ? b.getInt(4 * k) : b.getLong(8 * k);
  }

  /** The Java operation on two elements given as bits (AVG combines as SUM). */
  private static long apply(DType dtype, ReduceOp op, long x, long y) {
    switch (dtype) {
      case F32: {
        float a = Float.intBitsToFloat((int) x);
        float b = Float.intBitsToFloat((int) y);
        float r = op == ReduceOp.PROD ? a * b : op == ReduceOp.MIN ? Math.min(a, b)
            : op == ReduceOp.MAX ? Math.max(a, b) : a + b;
        return Float.floatToRawIntBits(r);
      }
      case F64: {
        double a = Double.longBitsToDouble(x);
        double b = Double.longBitsToDouble(y);
        double r = op == ReduceOp.PROD ? a * b : op == ReduceOp.MIN ? Math.min(a, b)
            : op == ReduceOp.MAX ? Math.max(a, b) : a + b;
        return Double.doubleToRawLongBits(r);
      }
      case I32: {
        int a = (int) x;
        int b = (int) y;
        return op == ReduceOp.PROD ? a * b : op == ReduceOp.MIN ? Math.min(a, b)
            : op == ReduceOp.MAX ? Math.max(a, b) : a + b;
      }
      default:
        return op == ReduceOp.PROD ? x * y : op == ReduceOp.MIN ? Math.min(x, y)
            : op == ReduceOp.MAX ? Math.max(x, y) : x + y;
    }
  }

  /** Same bits; for floating point, any NaN where the reference has a NaN (Java fixes no NaN's payload). */
  private static void check(DType dtype, long want, long got, String what) {
    if (dtype == DType.F32 && Float.isNaN(Float.intBitsToFloat((int) want))) {
      float g = Float.intBitsToFloat((int) got);
      assertTrue(Float.isNaN(g), what + ": want NaN, got " + g);
    } else if (dtype == DType.F64 && Double.isNaN(Double.longBitsToDouble(want))) {
      double g = Double.longBitsToDouble(got);
      assertTrue(Double.isNaN(g), what + ": want NaN, got " + g);
    } else {
      assertEquals(dtype.byteSize() == 4 ? (int) want : want, dtype.byteSize() == 4 ? (int) got : got, what);
    }
  }
}
