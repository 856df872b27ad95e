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

  /**
   * The bulk loops (branch-free, for the bfloat16 wire) against the scalar conversions above, on every upper
   * half of a float bit pattern with random and edge lower halves (ties, NaN payloads, infinities, zeros).
   */
  @Test
  void shouldConvertInBulkExactlyAsOneByOne() {
    SplittableRandom rnd = new SplittableRandom(13);
    int n = 0x10000 * 4;
    float[] a = new float[n + 3];
    int[] lows = {0x0000, 0x7FFF, 0x8000, 0xFFFF};
    for (int hi = 0; hi < 0x10000; hi++) {
      for (int k = 0; k < 4; k++) {
        int low = rnd.nextInt(3) == 0 ? lows[k] : rnd.nextInt(0x10000);
        a[3 + 4 * hi + k] = Float.intBitsToFloat((hi << 16) | low);
      }
    }
    short[] narrow = new short[n];
    HalfFloats.toBf16(a, 3, narrow, n);
    float[] rounded = a.clone();
    HalfFloats.roundToBf16(rounded, 3, n);
    float[] widened = new float[n + 5];
    HalfFloats.fromBf16At(narrow, 0, widened, 5, n);
    float[] summed = new float[n + 1];
    java.util.Arrays.fill(summed, 1.5f);
    int h = Bf16Pairs.words(n);
    int[] words = new int[h];
    Bf16Pairs.narrow(a, 3, h, words);
    short last = (n & 1) != 0 ? narrow[n - 1] : 0;
    Bf16Pairs.sum(words, last, 0, n, 0, n, summed, 1, null, new float[n], new float[n], false, false);
    for (int i = 0; i < n; i++) {
      float x = a[3 + i];
      short expected = HalfFloats.floatToBf16(x);
      String what = "bits " + Integer.toHexString(Float.floatToRawIntBits(x));
      assertEquals(expected, narrow[i], what);
      assertEquals(Float.floatToRawIntBits(HalfFloats.bf16ToFloat(expected)), Float.floatToRawIntBits(rounded[3 + i]),
          what);
      assertEquals(Float.floatToRawIntBits(HalfFloats.bf16ToFloat(expected)), Float.floatToRawIntBits(widened[5 + i]),
          what);
      assertEquals(Float.floatToIntBits(1.5f + HalfFloats.bf16ToFloat(expected)), Float.floatToIntBits(summed[1 + i]),
          what);
    }
    assertEquals(1.5f, summed[0], "outside the range: untouched");
  }
}
