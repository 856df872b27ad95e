package io.sparkcollective.core.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
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
 *
 * <p>Each loop is written out in full, without helper methods of its own: the Vector API's methods are always
 * inlined, but a plain helper is not once the caller's compilation has grown past C2's node budget, and a vector
 * passed to a call that is not inlined is boxed on the heap. On JDK 17 that made the binary16 narrowing 5x slower
 * as soon as a larger caller inlined it (KernelBenchmark.narrowToF16: 17 us per 64 Ki floats through warm-up, 88
 * after); written out, it stays at 19. HalfFloats calls these methods through method handles the JIT cannot see
 * through, so that none is ever inlined into a caller: each is compiled on its own, with the budget to itself.
 */
final class HalfVectors {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
  /** As many short lanes as {@link #F} has float lanes. */
  private static final VectorSpecies<Short> S =
      VectorSpecies.of(short.class, VectorShape.forBitSize(F.vectorBitSize() / 2));
  private static final int LANES = F.length();

  private HalfVectors() {}

  // bfloat16 bits of float bits: (bits + 0x7FFF + bit 16) >>> 16, rounding to nearest even; a NaN keeps its top
  // bits with the quiet bit set.

  static int toBf16(float[] a, int from, short[] out, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      IntVector bits = FloatVector.fromArray(F, a, from + i).reinterpretAsInts();
      IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
      IntVector half = bits.add(high.and(1)).add(0x7FFF).lanewise(VectorOperators.LSHR, 16)
          .blend(high.or(0x40), bits.and(0x7FFFFFFF).compare(VectorOperators.GT, 0x7F800000));
      ((ShortVector) half.convertShape(VectorOperators.I2S, S, 0)).intoArray(out, i);
    }
    return i;
  }

  static int roundToBf16(float[] a, int from, int n) {
    int i = from;
    for (; i <= from + n - LANES; i += LANES) {
      IntVector bits = FloatVector.fromArray(F, a, i).reinterpretAsInts();
      IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
      IntVector half = bits.add(high.and(1)).add(0x7FFF).lanewise(VectorOperators.LSHR, 16)
          .blend(high.or(0x40), bits.and(0x7FFFFFFF).compare(VectorOperators.GT, 0x7F800000));
      half.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(a, i);
    }
    return i;
  }

  static int fromBf16At(short[] in, int at, float[] a, int from, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      IntVector h = (IntVector) ShortVector.fromArray(S, in, at + i).convertShape(VectorOperators.S2I, I, 0);
      h.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(a, from + i);
    }
    return i;
  }

  // The bfloat16 wire's words (Bf16Pairs): one half of each word, shifted or masked into place, summed in.

  static int addBf16Words(int[] w, int k, int high, float[] a, int from, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      IntVector v = IntVector.fromArray(I, w, k + i);
      IntVector bits = high != 0 ? v.and(0xFFFF0000) : v.lanewise(VectorOperators.LSHL, 16);
      FloatVector.fromArray(F, a, from + i).add(bits.reinterpretAsFloats()).intoArray(a, from + i);
    }
    return i;
  }

  // binary16 bits of float bits: normal values rebiased with the 13 dropped bits rounded to nearest even (a carry
  // may reach the exponent); below 2^-14 float addition rounds the value to a multiple of 2^-24; from 65520 on,
  // infinity; a NaN keeps its top payload bits with the quiet bit set. (roundToF16 then widens back, below.)

  static int toF16(float[] a, int from, short[] out, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      IntVector bits = FloatVector.fromArray(F, a, from + i).reinterpretAsInts();
      IntVector sign = bits.lanewise(VectorOperators.LSHR, 16).and(0x8000);
      IntVector abs = bits.and(0x7FFFFFFF);
      IntVector half = abs.sub(0x38000000).add(0xFFF).add(abs.lanewise(VectorOperators.LSHR, 13).and(1))
          .lanewise(VectorOperators.LSHR, 13);
      IntVector subnormal = abs.reinterpretAsFloats().add(0.5f).reinterpretAsInts().sub(0x3F000000);
      half = half.blend(subnormal, abs.compare(VectorOperators.LT, 0x38800000));
      half = half.blend(0x7C00, abs.compare(VectorOperators.GE, 0x477FF000));
      IntVector nan = abs.lanewise(VectorOperators.LSHR, 13).and(0x3FF).or(0x7E00);
      half = half.blend(nan, abs.compare(VectorOperators.GT, 0x7F800000)).or(sign);
      ((ShortVector) half.convertShape(VectorOperators.I2S, S, 0)).intoArray(out, i);
    }
    return i;
  }

  static int roundToF16(float[] a, int from, int n) {
    int i = from;
    for (; i <= from + n - LANES; i += LANES) {
      IntVector bits = FloatVector.fromArray(F, a, i).reinterpretAsInts();
      IntVector sign = bits.and(0x80000000);
      IntVector abs = bits.and(0x7FFFFFFF);
      IntVector half = abs.sub(0x38000000).add(0xFFF).add(abs.lanewise(VectorOperators.LSHR, 13).and(1))
          .lanewise(VectorOperators.LSHR, 13);
      IntVector subnormal = abs.reinterpretAsFloats().add(0.5f).reinterpretAsInts().sub(0x3F000000);
      half = half.blend(subnormal, abs.compare(VectorOperators.LT, 0x38800000));
      half = half.blend(0x7C00, abs.compare(VectorOperators.GE, 0x477FF000));
      IntVector nan = abs.lanewise(VectorOperators.LSHR, 13).and(0x3FF).or(0x7E00);
      IntVector em = half.blend(nan, abs.compare(VectorOperators.GT, 0x7F800000));
      IntVector shifted = em.lanewise(VectorOperators.LSHL, 13);
      IntVector magnitude = shifted.reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
          .blend(shifted.or(0x7F800000), em.compare(VectorOperators.GE, 0x7C00));
      magnitude.or(sign).reinterpretAsFloats().intoArray(a, i);
    }
    return i;
  }

  // Float bits of binary16 bits: the bits shifted into place, as a float, are the value times 2^-112, normal and
  // subnormal alike; infinities and NaNs take the float's all-ones exponent.

  static int fromF16At(short[] in, int at, float[] a, int from, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      IntVector h = (IntVector) ShortVector.fromArray(S, in, at + i).convertShape(VectorOperators.S2I, I, 0);
      IntVector em = h.and(0x7FFF);
      IntVector shifted = em.lanewise(VectorOperators.LSHL, 13);
      IntVector magnitude = shifted.reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
          .blend(shifted.or(0x7F800000), em.compare(VectorOperators.GE, 0x7C00));
      magnitude.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats().intoArray(a, from + i);
    }
    return i;
  }

  static int addF16(short[] in, int at, float[] a, int from, int n) {
    int i = 0;
    for (; i <= n - LANES; i += LANES) {
      IntVector h = (IntVector) ShortVector.fromArray(S, in, at + i).convertShape(VectorOperators.S2I, I, 0);
      IntVector em = h.and(0x7FFF);
      IntVector shifted = em.lanewise(VectorOperators.LSHL, 13);
      IntVector magnitude = shifted.reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
          .blend(shifted.or(0x7F800000), em.compare(VectorOperators.GE, 0x7C00));
      FloatVector x = magnitude.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
      FloatVector.fromArray(F, a, from + i).add(x).intoArray(a, from + i);
    }
    return i;
  }
}
