package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Conversions against an independent reference: every half value decoded from its fields with
 * {@link Math#scalb}, and narrowing checked by searching the nearest representable value exactly (in
 * BigDecimal), ties to the even bit pattern.
 */
@Timeout(120)
class HalfFloatsTest {

  /** Value of binary16 bits from sign, exponent and fraction fields. */
  private static double f16Value(int bits) {
    int sign = (bits >> 15) & 1;
    int exp = (bits >> 10) & 0x1F;
    int frac = bits & 0x3FF;
    double v;
    if (exp == 0x1F) {
      v = frac == 0 ? Double.POSITIVE_INFINITY : Double.NaN;
    } else if (exp == 0) {
      v = Math.scalb((double) frac, -24);
    } else {
      v = Math.scalb(1.0 + frac / 1024.0, exp - 15);
    }
    return sign == 1 ? -v : v;
  }

  @Test
  void shouldDecodeEveryF16ExactlyAndRoundTrip() {
    for (int bits = 0; bits < 0x10000; bits++) {
      float f = HalfFloats.f16ToFloat((short) bits);
      double expected = f16Value(bits);
      if (Double.isNaN(expected)) {
        assertTrue(Float.isNaN(f), Integer.toHexString(bits));
        assertTrue(Float.isNaN(HalfFloats.f16ToFloat(HalfFloats.floatToF16(f))));
      } else {
        assertEquals(expected, f, 0.0, Integer.toHexString(bits));
        assertEquals(bits, HalfFloats.floatToF16(f) & 0xFFFF, "round trip of " + Integer.toHexString(bits));
      }
    }
  }

  /** Nearest binary16 bits to {@code x} by exhaustive search over the finite positive halves. */
  private static int nearestF16(float x) {
    if (Float.isNaN(x)) {
      return -1;
    }
    int sign = x < 0 || (x == 0 && 1 / x < 0) ? 0x8000 : 0;
    if (Float.isInfinite(x)) {
      return sign | 0x7C00;
    }
    BigDecimal target = new BigDecimal(Math.abs((double) x));
    // Halfway between the largest finite half (65504) and 2^16 rounds to infinity.
    if (target.compareTo(new BigDecimal(65520)) >= 0) {
      return sign | 0x7C00;
    }
    int best = 0;
    BigDecimal bestDistance = null;
    for (int bits = 0; bits < 0x7C00; bits++) {
      BigDecimal d = new BigDecimal(f16Value(bits)).subtract(target).abs();
      int c = bestDistance == null ? -1 : d.compareTo(bestDistance);
      if (c < 0 || (c == 0 && (bits & 1) == 0)) {
        best = bits;
        bestDistance = d;
      }
    }
    return sign | best;
  }

  @Test
  void shouldRoundFloatsToNearestEvenF16() {
    SplittableRandom rnd = new SplittableRandom(7);
    float[] edges = {0f, -0f, 65504f, 65519.99f, 65520f, 1e-8f, 2.98e-8f, 5.96e-8f, 6.1e-5f, 6.103515625e-05f,
        1.0009765625f, 1.00048828125f, 1.00146484375f, -3.3333f, Float.MIN_VALUE, Float.MAX_VALUE,
        Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY};
    for (float x : edges) {
      assertEquals(nearestF16(x), HalfFloats.floatToF16(x) & 0xFFFF, "f16 of " + x);
    }
    for (int i = 0; i < 300; i++) {
      float x = (float) (rnd.nextDouble(-1, 1) * Math.scalb(1.0, rnd.nextInt(-26, 17)));
      assertEquals(nearestF16(x), HalfFloats.floatToF16(x) & 0xFFFF, "f16 of " + x);
    }
  }

  @Test
  void shouldRoundFloatsToNearestEvenBf16() {
    SplittableRandom rnd = new SplittableRandom(11);
    for (int i = 0; i < 200_000; i++) {
      int bits = rnd.nextInt() & 0xBF7EFFFF; // finite, below the largest bfloat16's upper neighbour
      float x = Float.intBitsToFloat(bits);
      // The two bfloat16 neighbours of x: truncation, and truncation plus one bfloat16 ulp.
      int down = bits & 0xFFFF0000;
      float lo = Float.intBitsToFloat(down);
      float hi = Float.intBitsToFloat(down + 0x10000);
      BigDecimal exact = new BigDecimal(x);
      int c = exact.subtract(new BigDecimal(lo)).abs().compareTo(exact.subtract(new BigDecimal(hi)).abs());
      float expected = c < 0 ? lo : c > 0 ? hi : (((down >>> 16) & 1) == 0 ? lo : hi);
      assertEquals(Float.floatToIntBits(expected), Float.floatToIntBits(HalfFloats.bf16ToFloat(
          HalfFloats.floatToBf16(x))), "bf16 of " + x);
    }
    // Overflow: from halfway above the largest bfloat16 (odd bit pattern 0x7F7F, so ties go up) to infinity.
    assertEquals((short) 0x7F7F, HalfFloats.floatToBf16(Float.intBitsToFloat(0x7F7F7FFF)));
    assertEquals((short) 0x7F80, HalfFloats.floatToBf16(Float.intBitsToFloat(0x7F7F8000)));
    assertEquals((short) 0x7F80, HalfFloats.floatToBf16(Float.MAX_VALUE));
    assertEquals((short) 0xFF80, HalfFloats.floatToBf16(Float.NEGATIVE_INFINITY));
    assertTrue(Float.isNaN(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(Float.NaN))));
    assertTrue(Float.isNaN(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(Float.intBitsToFloat(0x7F800001)))));
  }
}
