package io.sparkcollective.core.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The array conversions of HalfFloats on SIMD registers, through the Vector API. The JIT does not
 * vectorise a narrowing from int to short on its own, which leaves the scalar loops at about a tenth of a
 * copy's speed; here each lane computes exactly what the scalar conversion does (round to nearest even,
 * overflow to infinity, NaN made quiet with its top payload bits, binary16 subnormals). Each method converts
 * whole registers and returns how far it got (an element count, or for the in-place roundings the index
 * reached); the caller's scalar loop does the rest. Compiled apart from the engine (an incubator module), and
 * loaded only when the JVM was started with {@code --add-modules jdk.incubator.vector} (HalfFloats.VECTORS).
 */
final class HalfVectors {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
  /** As many short lanes as {@link #F} has float lanes. */
  private static final VectorSpecies<Short> S =
      VectorSpecies.of(short.class, VectorShape.forBitSize(F.vectorBitSize() / 2));
  private static final int LANES = F.length();

  private HalfVectors() {}

  /** bfloat16 bits (in the low 16 bits of each lane) of float bits. */
  private static IntVector bf16Bits(IntVector bits) {
    IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
    IntVector rounded = bits.add(high.and(1)).add(0x7FFF).lanewise(VectorOperators.LSHR, 16);
    VectorMask<Integer> nan = bits.and(0x7FFFFFFF).compare(VectorOperators.GT, 0x7F800000);
    return rounded.blend(high.or(0x40), nan);
  }

  /** binary16 bits (in the low 16 bits of each lane) of float bits. */
  private static IntVector f16Bits(IntVector bits) {
    IntVector sign = bits.lanewise(VectorOperators.LSHR, 16).and(0x8000);
    IntVector abs = bits.and(0x7FFFFFFF);
    // Normal: rebias, round the 13 dropped bits to nearest even (a carry may reach the exponent).
    IntVector half = abs.sub(0x38000000).add(0xFFF).add(abs.lanewise(VectorOperators.LSHR, 13).and(1))
        .lanewise(VectorOperators.LSHR, 13);
    // Below 2^-14: float addition rounds the value to a multiple of 2^-24.
    IntVector subnormal = abs.reinterpretAsFloats().add(0.5f).reinterpretAsInts().sub(0x3F000000);
    half = half.blend(subnormal, abs.compare(VectorOperators.LT, 0x38800000));
    half = half.blend(0x7C00, abs.compare(VectorOperators.GE, 0x477FF000));
    IntVector nan = abs.lanewise(VectorOperators.LSHR, 13).and(0x3FF).or(0x7E00);
    half = half.blend(nan, abs.compare(VectorOperators.GT, 0x7F800000));
    return half.or(sign);
  }

  /** Float bits of binary16 bits (the low 16 bits of each lane; the upper ones are ignored). */
  private static IntVector fromF16Bits(IntVector h) {
    IntVector sign = h.and(0x8000).lanewise(VectorOperators.LSHL, 16);
    IntVector em = h.and(0x7FFF);
    IntVector shifted = em.lanewise(VectorOperators.LSHL, 13);
    // Normal and subnormal alike: the bits as a float are the value times 2^-112.
    IntVector magnitude = shifted.reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts();
    magnitude = magnitude.blend(shifted.or(0x7F800000), em.compare(VectorOperators.GE, 0x7C00));
    return magnitude.or(sign);
  }

  private static IntVector floatBits(float[] a, int at) {
    return FloatVector.fromArray(F, a, at).reinterpretAsInts();
  }

  private static IntVector shortsAsInts(short[] in, int at) {
    return (IntVector) ShortVector.fromArray(S, in, at).convertShape(VectorOperators.S2I, I, 0);
  }

  private static void intoShorts(IntVector v, short[] out, int at) {
    ((ShortVector) v.convertShape(VectorOperators.I2S, S, 0)).intoArray(out, at);
  }

  static int toBf16(float[] a, int from, short[] out, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      intoShorts(bf16Bits(floatBits(a, from + i)), out, i);
    }
    return i;
  }

  static int roundToBf16(float[] a, int from, int n) {
    int i = from;
    for (; i <= from + n - LANES; i += LANES) {
      bf16Bits(floatBits(a, i)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(a, i);
    }
    return i;
  }

  static int fromBf16At(short[] in, int at, float[] a, int from, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      shortsAsInts(in, at + i).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(a, from + i);
    }
    return i;
  }

  static int addBf16(short[] in, float[] a, int from, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      FloatVector x = shortsAsInts(in, i).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
      FloatVector.fromArray(F, a, from + i).add(x).intoArray(a, from + i);
    }
    return i;
  }

  static int toF16(float[] a, int from, short[] out, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      intoShorts(f16Bits(floatBits(a, from + i)), out, i);
    }
    return i;
  }

  static int roundToF16(float[] a, int from, int n) {
    int i = from;
    for (; i <= from + n - LANES; i += LANES) {
      fromF16Bits(f16Bits(floatBits(a, i))).reinterpretAsFloats().intoArray(a, i);
    }
    return i;
  }

  static int fromF16At(short[] in, int at, float[] a, int from, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      fromF16Bits(shortsAsInts(in, at + i)).reinterpretAsFloats().intoArray(a, from + i);
    }
    return i;
  }

  static int addF16(short[] in, float[] a, int from, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      FloatVector x = fromF16Bits(shortsAsInts(in, i)).reinterpretAsFloats();
      FloatVector.fromArray(F, a, from + i).add(x).intoArray(a, from + i);
    }
    return i;
  }
}
