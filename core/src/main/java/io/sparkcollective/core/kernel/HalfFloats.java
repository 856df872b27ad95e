package io.sparkcollective.core.kernel;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Conversions between binary16 / bfloat16 bit patterns (held in a {@code short}) and {@code float}.
 * Narrowing rounds to nearest, ties to even, overflows to infinity and keeps NaN a (quiet) NaN.
 */
public final class HalfFloats {
  /**
   * True if the array conversions run on SIMD registers ({@link HalfVectors}): the JVM was started with
   * {@code --add-modules jdk.incubator.vector} and the system property {@code sparkcollective.halfVectors} is
   * not {@code false}. Otherwise they are scalar loops, several times slower.
   */
  public static final boolean VECTORS = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
      && !"false".equals(System.getProperty("sparkcollective.halfVectors"));

  /**
   * True if the float16 array conversions are the JVM's own ({@code Float.floatToFloat16} and
   * {@code Float.float16ToFloat}), which Java 21 and later compile to the processor's conversion instructions
   * over whole registers: about the speed of a copy, where the Vector API forms take up to three times as long.
   * Only from Java 21, only if they give this class's bits (checked once, see {@link #sameBits}: the JVM's own
   * fallback code, used where the processor has no such instructions, keeps NaN payloads otherwise), and not
   * with the system property {@code sparkcollective.nativeF16} set to {@code false}.
   */
  public static final boolean NATIVE_F16;
  /** {@code Float.floatToFloat16}: float to short; null unless {@link #NATIVE_F16}. */
  private static final MethodHandle TO_F16;
  /** {@code Float.float16ToFloat}: short to float; null unless {@link #NATIVE_F16}. */
  private static final MethodHandle FROM_F16;

  // The Vector API loops (HalfVectors) are called through method handles held in plain static fields, not final
  // ones: the JIT takes a final static method handle for a constant and inlines its target, but cannot see through
  // one it must load, so each loop stays a call and is compiled on its own. Inlined into a large caller (a step of
  // a whole all-reduce), a loop could push that compilation past C2's budget: the Vector API's intrinsics then fail
  // to inline and its vectors are boxed on the heap, several times slower; a call per segment or tile costs a few
  // nanoseconds. Null unless VECTORS.
  /** HalfVectors.toBf16 / toF16: {@code (float[] a, int from, short[] out, int n) -> elements done}. */
  private static MethodHandle vectorToBf16;
  private static MethodHandle vectorToF16;
  /** HalfVectors.roundToBf16 / roundToF16: {@code (float[] a, int from, int n) -> index reached}. */
  private static MethodHandle vectorRoundToBf16;
  private static MethodHandle vectorRoundToF16;
  /** HalfVectors.fromBf16At, fromF16At, addF16: {@code (short[] in, int at, float[] a, int from, int n) -> elements
   * done}. */
  private static MethodHandle vectorFromBf16;
  private static MethodHandle vectorFromF16;
  private static MethodHandle vectorAddF16;
  /** HalfVectors.addBf16Words: {@code (int[] w, int k, int high, float[] a, int from, int n) -> elements done}. */
  private static MethodHandle vectorAddBf16Words;

  static {
    if (VECTORS) {
      try {
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        MethodType narrow = MethodType.methodType(int.class, float[].class, int.class, short[].class, int.class);
        MethodType round = MethodType.methodType(int.class, float[].class, int.class, int.class);
        MethodType widen = MethodType.methodType(int.class, short[].class, int.class, float[].class, int.class,
            int.class);
        vectorToBf16 = lookup.findStatic(HalfVectors.class, "toBf16", narrow);
        vectorToF16 = lookup.findStatic(HalfVectors.class, "toF16", narrow);
        vectorRoundToBf16 = lookup.findStatic(HalfVectors.class, "roundToBf16", round);
        vectorRoundToF16 = lookup.findStatic(HalfVectors.class, "roundToF16", round);
        vectorFromBf16 = lookup.findStatic(HalfVectors.class, "fromBf16At", widen);
        vectorFromF16 = lookup.findStatic(HalfVectors.class, "fromF16At", widen);
        vectorAddF16 = lookup.findStatic(HalfVectors.class, "addF16", widen);
        vectorAddBf16Words = lookup.findStatic(HalfVectors.class, "addBf16Words", MethodType.methodType(int.class,
            int[].class, int.class, int.class, float[].class, int.class, int.class));
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }
  }

  static {
    MethodHandle to = null;
    MethodHandle from = null;
    boolean on = false;
    if (Runtime.version().feature() >= 21 && !"false".equals(System.getProperty("sparkcollective.nativeF16"))) {
      try {
        MethodHandles.Lookup lookup = MethodHandles.publicLookup();
        to = lookup.findStatic(Float.class, "floatToFloat16", MethodType.methodType(short.class, float.class));
        from = lookup.findStatic(Float.class, "float16ToFloat", MethodType.methodType(float.class, short.class));
        on = sameBits(to, from);
      } catch (Throwable e) {
        on = false;
      }
    }
    NATIVE_F16 = on;
    TO_F16 = on ? to : null;
    FROM_F16 = on ? from : null;
  }

  private HalfFloats() {}

  /**
   * True if {@code to} and {@code from} agree with {@link #floatToF16} and {@link #f16ToFloat} bit for bit: every
   * 16-bit pattern widened; narrowed, every sign and exponent with mantissas at and around the rounding points,
   * the subnormal and overflow edges, and NaNs quiet and signalling with high, low and no payload bits. One
   * difference is allowed: the processor's widening quiets a signalling NaN (sets its quiet bit), which no
   * result shows, since every widened value is narrowed again before it leaves a reduction and narrowing
   * quiets NaNs either way (copies move the 16 bits themselves and never convert).
   */
  private static boolean sameBits(MethodHandle to, MethodHandle from) throws Throwable {
    for (int h = 0; h < 0x10000; h++) {
      float got = (float) from.invokeExact((short) h);
      float want = f16ToFloat((short) h);
      if (Float.floatToRawIntBits(got) != Float.floatToRawIntBits(want)
          && !(isSignallingF16((short) h) && floatToF16(got) == floatToF16(want))) {
        return false;
      }
    }
    int[] mantissas = {0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0x3FFFFF, 0x400000, 0x400001, 0x7FE000,
        0x7FEFFF, 0x7FF000, 0x7FFFFF, 0x200000, 0x001000};
    for (int signExp = 0; signExp < 0x200; signExp++) {
      for (int m : mantissas) {
        float f = Float.intBitsToFloat((signExp << 23) | m);
        if ((short) to.invokeExact(f) != floatToF16(f)) {
          return false;
        }
      }
    }
    return true;
  }

  /** binary16 bits to float; exact. */
  public static float f16ToFloat(short h) {
    int bits = h & 0xFFFF;
    int sign = (bits & 0x8000) << 16;
    int exp = (bits >>> 10) & 0x1F;
    int mant = bits & 0x3FF;
    if (exp == 0x1F) {
      return Float.intBitsToFloat(sign | 0x7F800000 | (mant << 13));
    }
    if (exp == 0) {
      if (mant == 0) {
        return Float.intBitsToFloat(sign);
      }
      // Subnormal half: value = mant * 2^-24, exactly representable as a normal float.
      float v = mant * 0x1p-24f;
      return sign != 0 ? -v : v;
    }
    return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  }

  /** float to binary16 bits, rounding to nearest even. */
  public static short floatToF16(float f) {
    int bits = Float.floatToRawIntBits(f);
    int sign = (bits >>> 16) & 0x8000;
    int abs = bits & 0x7FFFFFFF;
    if (abs >= 0x7F800000) {
      // Inf stays Inf; NaN becomes a quiet NaN with the top payload bits.
      return (short) (sign | 0x7C00 | (abs > 0x7F800000 ? 0x200 | ((abs >>> 13) & 0x3FF) : 0));
    }
    if (abs >= 0x477FF000) {
      // At or above 65520 (halfway between the largest half, 65504, and 2^16): rounds to infinity.
      return (short) (sign | 0x7C00);
    }
    if (abs < 0x38800000) {
      // Below the smallest normal half (2^-14): subnormal result. Let float arithmetic round the value
      // to a multiple of 2^-24 (ties to even), exact because the sum stays in float's range.
      float magnitude = Float.intBitsToFloat(abs);
      int rounded = Float.floatToRawIntBits(magnitude + 0.5f) - Float.floatToRawIntBits(0.5f);
      return (short) (sign | rounded);
    }
    // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
    int halfBits = (abs - 0x38000000) >>> 13;
    int dropped = abs & 0x1FFF;
    if (dropped > 0x1000 || (dropped == 0x1000 && (halfBits & 1) != 0)) {
      halfBits++;
    }
    return (short) (sign | halfBits);
  }

  /** True for a binary16 signalling NaN: all-ones exponent, a payload, the quiet bit clear. */
  static boolean isSignallingF16(short h) {
    return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0 && (h & 0x200) == 0;
  }

  /** bfloat16 bits to float; exact. */
  public static float bf16ToFloat(short b) {
    return Float.intBitsToFloat((b & 0xFFFF) << 16);
  }

  /** float to bfloat16 bits, rounding to nearest even. */
  public static short floatToBf16(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7FFFFFFF) > 0x7F800000) {
      return (short) ((bits >>> 16) | 0x40);
    }
    int rounding = 0x7FFF + ((bits >>> 16) & 1);
    return (short) ((bits + rounding) >>> 16);
  }

  /** {@code out[i] = floatToBf16(a[from + i])} for i in [0, n). */
  public static void toBf16(float[] a, int from, short[] out, int n) {
    for (int i = VECTORS ? narrow(vectorToBf16, a, from, out, n) : 0; i < n; i++) {
      out[i] = floatToBf16(a[from + i]);
    }
  }

  /** {@code a[from + i] = bf16ToFloat(floatToBf16(a[from + i]))} for i in [0, n): rounds in place. */
  static void roundToBf16(float[] a, int from, int n) {
    for (int i = VECTORS ? round(vectorRoundToBf16, a, from, n) : from; i < from + n; i++) {
      a[i] = Float.intBitsToFloat(floatToBf16(a[i]) << 16);
    }
  }

  /** {@code a[from + i] = bf16ToFloat(in[at + i])} for i in [0, n). */
  public static void fromBf16At(short[] in, int at, float[] a, int from, int n) {
    for (int i = VECTORS ? widen(vectorFromBf16, in, at, a, from, n) : 0; i < n; i++) {
      a[from + i] = Float.intBitsToFloat(in[at + i] << 16);
    }
  }

  /** {@code out[i] = floatToF16(a[from + i])} for i in [0, n). */
  public static void toF16(float[] a, int from, short[] out, int n) {
    if (NATIVE_F16) {
      try {
        for (int i = 0; i < n; i++) {
          out[i] = (short) TO_F16.invokeExact(a[from + i]);
        }
      } catch (Throwable e) {
        throw new IllegalStateException("Float.floatToFloat16 failed", e);
      }
      return;
    }
    for (int i = VECTORS ? narrow(vectorToF16, a, from, out, n) : 0; i < n; i++) {
      out[i] = floatToF16(a[from + i]);
    }
  }

  /** {@code a[from + i] = f16ToFloat(floatToF16(a[from + i]))} for i in [0, n): rounds in place. */
  static void roundToF16(float[] a, int from, int n) {
    if (NATIVE_F16) {
      try {
        for (int i = from; i < from + n; i++) {
          a[i] = (float) FROM_F16.invokeExact((short) TO_F16.invokeExact(a[i]));
        }
      } catch (Throwable e) {
        throw new IllegalStateException("Float.floatToFloat16 failed", e);
      }
      return;
    }
    for (int i = VECTORS ? round(vectorRoundToF16, a, from, n) : from; i < from + n; i++) {
      a[i] = f16ToFloat(floatToF16(a[i]));
    }
  }

  /**
   * {@code a[from + i] = f16ToFloat(in[at + i])} for i in [0, n), except that with {@link #NATIVE_F16} a
   * signalling NaN comes out quiet.
   */
  public static void fromF16At(short[] in, int at, float[] a, int from, int n) {
    if (NATIVE_F16) {
      try {
        for (int i = 0; i < n; i++) {
          a[from + i] = (float) FROM_F16.invokeExact(in[at + i]);
        }
      } catch (Throwable e) {
        throw new IllegalStateException("Float.float16ToFloat failed", e);
      }
      return;
    }
    for (int i = VECTORS ? widen(vectorFromF16, in, at, a, from, n) : 0; i < n; i++) {
      a[from + i] = f16ToFloat(in[at + i]);
    }
  }

  /** {@code a[from + i] += f16ToFloat(in[i])} for i in [0, n). */
  static void addF16(short[] in, float[] a, int from, int n) {
    if (NATIVE_F16) {
      try {
        for (int i = 0; i < n; i++) {
          a[from + i] += (float) FROM_F16.invokeExact(in[i]);
        }
      } catch (Throwable e) {
        throw new IllegalStateException("Float.float16ToFloat failed", e);
      }
      return;
    }
    for (int i = VECTORS ? widen(vectorAddF16, in, 0, a, from, n) : 0; i < n; i++) {
      a[from + i] += f16ToFloat(in[i]);
    }
  }

  private static int narrow(MethodHandle kernel, float[] a, int from, short[] out, int n) {
    try {
      return (int) kernel.invokeExact(a, from, out, n);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  private static int round(MethodHandle kernel, float[] a, int from, int n) {
    try {
      return (int) kernel.invokeExact(a, from, n);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code a[from + i] += } the low ({@code high} false) or high half of {@code w[k + i]} as a float, for i in
   * [0, n): the bfloat16 wire's words ({@link Bf16Pairs}) summed in, in one pass, where the Vector API is here
   * ({@link #VECTORS}); false otherwise (the caller widens, then sums).
   */
  static boolean addBf16Words(int[] w, int k, boolean high, float[] a, int from, int n) {
    if (!VECTORS) {
      return false;
    }
    int i;
    try {
      i = (int) vectorAddBf16Words.invokeExact(w, k, high ? 1 : 0, a, from, n);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
    for (; i < n; i++) {
      a[from + i] += Float.intBitsToFloat(high ? w[k + i] & 0xFFFF0000 : w[k + i] << 16);
    }
    return true;
  }

  private static int widen(MethodHandle kernel, short[] in, int at, float[] a, int from, int n) {
    try {
      return (int) kernel.invokeExact(in, at, a, from, n);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }
}
