package io.sparkcollective.core.kernel;

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

  private HalfFloats() {}

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
    for (int i = VECTORS ? HalfVectors.toBf16(a, from, out, n) : 0; i < n; i++) {
      out[i] = floatToBf16(a[from + i]);
    }
  }

  /** {@code a[from + i] = bf16ToFloat(floatToBf16(a[from + i]))} for i in [0, n): rounds in place. */
  static void roundToBf16(float[] a, int from, int n) {
    for (int i = VECTORS ? HalfVectors.roundToBf16(a, from, n) : from; i < from + n; i++) {
      a[i] = Float.intBitsToFloat(floatToBf16(a[i]) << 16);
    }
  }

  /** {@code a[from + i] = bf16ToFloat(in[at + i])} for i in [0, n). */
  public static void fromBf16At(short[] in, int at, float[] a, int from, int n) {
    for (int i = VECTORS ? HalfVectors.fromBf16At(in, at, a, from, n) : 0; i < n; i++) {
      a[from + i] = Float.intBitsToFloat(in[at + i] << 16);
    }
  }

  /** {@code a[from + i] += bf16ToFloat(in[i])} for i in [0, n): the received values summed in, in one pass. */
  static void addBf16(short[] in, float[] a, int from, int n) {
    for (int i = VECTORS ? HalfVectors.addBf16(in, a, from, n) : 0; i < n; i++) {
      a[from + i] += Float.intBitsToFloat(in[i] << 16);
    }
  }

  /** {@code out[i] = floatToF16(a[from + i])} for i in [0, n). */
  public static void toF16(float[] a, int from, short[] out, int n) {
    for (int i = VECTORS ? HalfVectors.toF16(a, from, out, n) : 0; i < n; i++) {
      out[i] = floatToF16(a[from + i]);
    }
  }

  /** {@code a[from + i] = f16ToFloat(floatToF16(a[from + i]))} for i in [0, n): rounds in place. */
  static void roundToF16(float[] a, int from, int n) {
    for (int i = VECTORS ? HalfVectors.roundToF16(a, from, n) : from; i < from + n; i++) {
      a[i] = f16ToFloat(floatToF16(a[i]));
    }
  }

  /** {@code a[from + i] = f16ToFloat(in[at + i])} for i in [0, n). */
  public static void fromF16At(short[] in, int at, float[] a, int from, int n) {
    for (int i = VECTORS ? HalfVectors.fromF16At(in, at, a, from, n) : 0; i < n; i++) {
      a[from + i] = f16ToFloat(in[at + i]);
    }
  }

  /** {@code a[from + i] += f16ToFloat(in[i])} for i in [0, n). */
  static void addF16(short[] in, float[] a, int from, int n) {
    for (int i = VECTORS ? HalfVectors.addF16(in, a, from, n) : 0; i < n; i++) {
      a[from + i] += f16ToFloat(in[i]);
    }
  }
}
