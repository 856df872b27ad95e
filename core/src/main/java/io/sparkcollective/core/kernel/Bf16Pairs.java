package io.sparkcollective.core.kernel;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The bfloat16 wire of reductions, laid out so that converting it takes only 32-bit lane operations. A segment
 * of {@code n} elements travels as {@code h = n / 2} little-endian 32-bit words, word {@code j} holding element
 * {@code j} in its low half and element {@code h + j} in its high half, then, for odd {@code n}, the last element
 * as one 16-bit value: {@code 2n} bytes, as before, in another order.
 *
 * <p>Why: C2 (JDK 17, and 25 too) vectorises a loop only where every lane has one width. Narrowing a float array
 * into a short array, or widening it back, mixes 32- and 16-bit lanes, and reading a float's bits
 * ({@code Float.floatToRawIntBits}) in a loop is not vectorised either, so the element-by-element conversions ran
 * at a tenth of a copy's speed without the Vector API module. In this layout a word is made of two floats'
 * rounded bits ({@code lo >>> 16 | hi & 0xFFFF0000}) and gives them back with one shift and one mask: with the
 * floats' bits read and written as ints through {@code sun.misc.Unsafe} (where {@link OffHeapKernels#AVAILABLE}
 * says so), every loop is int to int and runs on SIMD registers, at about a copy's speed or faster. Elsewhere
 * the same loops run element by element on the same layout (the same bits, only slower).
 *
 * <p>Rounding is {@link HalfFloats#floatToBf16}'s, bit for bit: to nearest even, a NaN keeping its top bits with
 * the quiet bit set.
 */
public final class Bf16Pairs {
  /** Offsets of element 0 of a float and of an int array, for {@code sun.misc.Unsafe}'s array accessors. */
  private static final long FLOATS;
  private static final long INTS;
  /** {@code sun.misc.Unsafe.getInt(Object, long)} and {@code putInt(Object, long, int)}, bound to its instance. */
  private static final MethodHandle GET_INT;
  private static final MethodHandle PUT_INT;
  /** True if the loops read and write float bits as ints here (SIMD); false: element by element. */
  public static final boolean LANES;

  static {
    MethodHandle get = null;
    MethodHandle put = null;
    long floats = 0;
    long ints = 0;
    boolean lanes = false;
    Object unsafe = OffHeapKernels.UNSAFE;
    if (unsafe != null) {
      try {
        Class<?> type = unsafe.getClass();
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        get = lookup.findVirtual(type, "getInt", MethodType.methodType(int.class, Object.class, long.class))
            .bindTo(unsafe);
        put = lookup.findVirtual(type, "putInt", MethodType.methodType(void.class, Object.class, long.class,
            int.class)).bindTo(unsafe);
        MethodHandle base = lookup.findVirtual(type, "arrayBaseOffset", MethodType.methodType(int.class,
            Class.class)).bindTo(unsafe);
        floats = (int) base.invoke(float[].class);
        ints = (int) base.invoke(int[].class);
        lanes = true;
      } catch (Throwable e) {
        lanes = false;
      }
    }
    GET_INT = get;
    PUT_INT = put;
    FLOATS = floats;
    INTS = ints;
    LANES = lanes;
  }

  private Bf16Pairs() {}

  /** Words of a segment of {@code n} elements (the last element of an odd count travels after them). */
  public static int words(int n) {
    return n >>> 1;
  }

  /**
   * Float bits rounded to bfloat16, in the top half (the low half zero): {@link HalfFloats#floatToBf16} shifted
   * into place, without a branch.
   */
  static int rounded(int bits) {
    int nan = (0x7F800000 - (bits & 0x7FFFFFFF)) >> 31;
    return ((bits + 0x7FFF + ((bits >>> 16) & 1)) & ~nan | (bits | 0x400000) & nan) & 0xFFFF0000;
  }

  /** {@code w[j] = rounded(a[p + j]) >>> 16 | rounded(a[p + h + j])} for j in [0, h). */
  public static void narrow(float[] a, int p, int h, int[] w) {
    if (!LANES) {
      for (int j = 0; j < h; j++) {
        w[j] = rounded(Float.floatToRawIntBits(a[p + j])) >>> 16 | rounded(Float.floatToRawIntBits(a[p + h + j]));
      }
      return;
    }
    try {
      long lo = FLOATS + 4L * p;
      long hi = FLOATS + 4L * (p + h);
      for (int j = 0; j < h; j++) {
        long o = 4L * j;
        w[j] = rounded((int) GET_INT.invokeExact((Object) a, lo + o)) >>> 16
            | rounded((int) GET_INT.invokeExact((Object) a, hi + o));
      }
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code s[q + j] = } the low ({@code high} false) or high half of {@code w[k + j]} as a float, for j in
   * [0, m): bfloat16 widened exactly.
   */
  static void widen(int[] w, int k, boolean high, float[] s, int q, int m) {
    if (!LANES) {
      for (int j = 0; j < m; j++) {
        s[q + j] = Float.intBitsToFloat(high ? w[k + j] & 0xFFFF0000 : w[k + j] << 16);
      }
      return;
    }
    try {
      long to = FLOATS + 4L * q;
      long from = INTS + 4L * k;
      if (high) {
        for (int j = 0; j < m; j++) {
          long o = 4L * j;
          PUT_INT.invokeExact((Object) s, to + o, (int) GET_INT.invokeExact((Object) w, from + o) & 0xFFFF0000);
        }
      } else {
        for (int j = 0; j < m; j++) {
          long o = 4L * j;
          PUT_INT.invokeExact((Object) s, to + o, (int) GET_INT.invokeExact((Object) w, from + o) << 16);
        }
      }
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  /** {@code a[q + j]} rounded to bfloat16 in place, for j in [0, m). */
  static void round(float[] a, int q, int m) {
    if (!LANES) {
      HalfFloats.roundToBf16(a, q, m);
      return;
    }
    try {
      long at = FLOATS + 4L * q;
      for (int j = 0; j < m; j++) {
        long o = 4L * j;
        PUT_INT.invokeExact((Object) a, at + o, rounded((int) GET_INT.invokeExact((Object) a, at + o)));
      }
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Elements {@code [from, from+m)} of a segment (as for {@link #unpack}) summed into {@code a[shift + e]}: with
   * {@code inputs}, {@code a}'s own values rounded to bfloat16 first; with {@code round}, the sums rounded after.
   * The received values are summed in one pass where the Vector API is here. Otherwise they are widened first:
   * into {@code in} if it is not null (an array indexed like {@code a}, so that the sum vectorises), else into
   * {@code rec} beside a copy of {@code a}'s range in {@code acc} (two arrays of at least {@code min(m, CHUNK)}
   * floats), {@link #CHUNK} elements at a time, summed at the same indices and copied back.
   */
  static void sum(int[] w, short last, int off, int n, int from, int m, float[] a, int shift, float[] in,
      float[] acc, float[] rec, boolean inputs, boolean round) {
    int p = shift + from;
    if (HalfFloats.VECTORS || in != null) {
      if (inputs) {
        round(a, p, m);
      }
      if (!addUnpacked(w, last, off, n, from, m, a, shift)) {
        unpack(w, last, off, n, from, m, in, shift);
        Kernels.reduce(a, in, p, m, io.sparkcollective.core.api.ReduceOp.SUM);
      }
      if (round) {
        round(a, p, m);
      }
      return;
    }
    for (int c = 0; c < m; c += CHUNK) {
      int k = Math.min(CHUNK, m - c);
      System.arraycopy(a, p + c, acc, 0, k);
      if (inputs) {
        round(acc, 0, k);
      }
      unpack(w, last, off, n, from + c, k, rec, -(from + c));
      Kernels.reduce(acc, rec, 0, k, io.sparkcollective.core.api.ReduceOp.SUM);
      if (round) {
        round(acc, 0, k);
      }
      System.arraycopy(acc, 0, a, p + c, k);
    }
  }

  /** Elements a sum stages at a time ({@link #sum}): 4 KiB per array, well inside a first-level cache. */
  static final int CHUNK = 1024;

  /**
   * {@link #unpack}, summed into {@code dst} instead of written, in one pass, where the Vector API is here
   * ({@link HalfFloats#VECTORS}); false otherwise, having done nothing.
   */
  static boolean addUnpacked(int[] w, short last, int off, int n, int from, int len, float[] dst, int shift) {
    if (!HalfFloats.VECTORS) {
      return false;
    }
    halves(w, last, off, n, from, len, dst, shift, true);
    return true;
  }

  /**
   * Elements {@code [from, from+len)} of a segment that starts at element {@code off} and has {@code n} elements,
   * its words {@code w} and its odd last value {@code last}, widened into {@code dst[shift + e]} for each element e.
   */
  public static void unpack(int[] w, short last, int off, int n, int from, int len, float[] dst, int shift) {
    halves(w, last, off, n, from, len, dst, shift, false);
  }

  /** The range cut where the segment's halves and its odd last value lie, each part widened or summed in. */
  private static void halves(int[] w, short last, int off, int n, int from, int len, float[] dst, int shift,
      boolean add) {
    int h = words(n);
    int end = from + len;
    int loEnd = Math.min(end, off + h);
    if (from < loEnd) {
      part(w, from - off, false, dst, shift + from, loEnd - from, add);
    }
    int hiFrom = Math.max(from, off + h);
    int hiEnd = Math.min(end, off + 2 * h);
    if (hiFrom < hiEnd) {
      part(w, hiFrom - off - h, true, dst, shift + hiFrom, hiEnd - hiFrom, add);
    }
    if ((n & 1) != 0 && from <= off + 2 * h && off + 2 * h < end) {
      float v = HalfFloats.bf16ToFloat(last);
      dst[shift + off + 2 * h] = add ? dst[shift + off + 2 * h] + v : v;
    }
  }

  private static void part(int[] w, int k, boolean high, float[] dst, int q, int m, boolean add) {
    if (add) {
      HalfFloats.addBf16Words(w, k, high, dst, q, m);
    } else {
      widen(w, k, high, dst, q, m);
    }
  }
}
