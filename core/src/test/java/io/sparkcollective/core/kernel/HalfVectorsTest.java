package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The array conversions, on SIMD registers in this JVM (the Vector API, or from Java 21 the JVM's own float16
 * conversions), bit for bit against the scalar conversion of each element: every 16-bit pattern widened, and
 * narrowing over random bit patterns (every exponent, NaN payloads) and the edges (ties, the largest finite
 * values, the subnormal boundaries, infinities), at offsets and lengths that leave a scalar tail.
 */
@Timeout(120)
class HalfVectorsTest {
  private static final int FROM = 3;
  private static final int AT = 5;

  @Test
  void shouldRunOnTheVectorApiInTheseTests() {
    assertTrue(HalfFloats.VECTORS, "the tests' JVM has jdk.incubator.vector: the vector path must be on");
  }

  @Test
  void shouldConvertFloat16WithTheJvmsOwnConversionsFromJava21() throws Exception {
    Path cpu = Path.of("/proc/cpuinfo");
    assumeTrue(Files.exists(cpu) && Files.readString(cpu).matches("(?s).*\\bf16c\\b.*"),
        "a processor without float16 conversion instructions: the JVM's own conversions differ on NaNs");
    assertEquals(Runtime.version().feature() >= 21, HalfFloats.NATIVE_F16, "Java " + Runtime.version());
  }

  private static float[] edgeAndRandomFloats() {
    float[] edges = {0f, -0f, Float.MIN_VALUE, Float.MIN_NORMAL, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f,
        0x1p-26f, 0x1.ffcp-15f, 0x1.ff8p-15f, 65504f, 65519.99f, 65520f, 65536f, Float.MAX_VALUE, 1f,
        1.00048828125f, 1.000732421875f, 1.00390625f, 1.005859375f, 3.3895314e38f, 3.3961775e38f,
        Float.POSITIVE_INFINITY, Float.NaN, Float.intBitsToFloat(0x7F800001), Float.intBitsToFloat(0x7FBFFFFF),
        Float.intBitsToFloat(0xFFC00001), Float.intBitsToFloat(0x7F801FFF)};
    SplittableRandom rnd = new SplittableRandom(2026);
    int random = 1 << 20;
    float[] a = new float[FROM + 2 * edges.length + random + 13];
    int k = FROM;
    for (float e : edges) {
      a[k++] = e;
      a[k++] = -e;
    }
    for (int i = 0; i < random; i++) {
      a[k++] = Float.intBitsToFloat(rnd.nextInt());
    }
    while (k < a.length) {
      a[k++] = (float) rnd.nextGaussian();
    }
    return a;
  }

  private static short[] randomShorts(long seed, int n) {
    SplittableRandom rnd = new SplittableRandom(seed);
    short[] s = new short[n];
    for (int i = 0; i < n; i++) {
      s[i] = (short) rnd.nextInt();
    }
    return s;
  }

  private static void assertSameBits(float want, float got, String what) {
    assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(got), what);
  }

  @Test
  void shouldWidenEverySixteenBitPatternAsTheScalarConversionDoes() {
    int n = 65536;
    short[] in = new short[AT + n];
    for (int i = 0; i < n; i++) {
      in[AT + i] = (short) i;
    }
    float[] f16 = new float[FROM + n];
    float[] bf16 = new float[FROM + n];
    HalfFloats.fromF16At(in, AT, f16, FROM, n);
    HalfFloats.fromBf16At(in, AT, bf16, FROM, n);
    float[] sumF16 = new float[FROM + n];
    float[] sumBf16 = new float[FROM + n];
    java.util.Arrays.fill(sumF16, 0.25f);
    java.util.Arrays.fill(sumBf16, 0.25f);
    short[] from0 = java.util.Arrays.copyOfRange(in, AT, AT + n);
    HalfFloats.addF16(from0, sumF16, FROM, n);
    Bf16Pairs.sum(pairs(in, AT, n), (short) 0, 0, n, 0, n, sumBf16, FROM, new float[FROM + n], null, null, false,
        false);
    for (int i = 0; i < n; i++) {
      short h = (short) i;
      String what = "pattern 0x" + Integer.toHexString(i);
      float wantF16 = HalfFloats.f16ToFloat(h);
      if (HalfFloats.NATIVE_F16 && HalfFloats.isSignallingF16(h)) {
        // The processor's widening sets the quiet bit (HalfFloats.NATIVE_F16 says why no result shows it).
        wantF16 = Float.intBitsToFloat(Float.floatToRawIntBits(wantF16) | 0x400000);
      }
      assertSameBits(wantF16, f16[FROM + i], "F16 " + what);
      assertSameBits(HalfFloats.bf16ToFloat(h), bf16[FROM + i], "BF16 " + what);
      assertSameBits(0.25f + HalfFloats.f16ToFloat(h), sumF16[FROM + i], "F16 sum " + what);
      assertSameBits(0.25f + HalfFloats.bf16ToFloat(h), sumBf16[FROM + i], "BF16 sum " + what);
    }
  }

  @Test
  void shouldNarrowAndRoundEveryFloatAsTheScalarConversionDoes() {
    float[] a = edgeAndRandomFloats();
    int n = a.length - FROM;
    short[] f16 = new short[n];
    short[] bf16 = new short[n];
    HalfFloats.toF16(a, FROM, f16, n);
    HalfFloats.toBf16(a, FROM, bf16, n);
    float[] roundedF16 = a.clone();
    float[] roundedBf16 = a.clone();
    HalfFloats.roundToF16(roundedF16, FROM, n);
    HalfFloats.roundToBf16(roundedBf16, FROM, n);
    for (int i = 0; i < n; i++) {
      float x = a[FROM + i];
      String what = "element " + i + " (0x" + Integer.toHexString(Float.floatToRawIntBits(x)) + ")";
      assertEquals(HalfFloats.floatToF16(x), f16[i], "F16 " + what);
      assertEquals(HalfFloats.floatToBf16(x), bf16[i], "BF16 " + what);
      assertSameBits(HalfFloats.f16ToFloat(HalfFloats.floatToF16(x)), roundedF16[FROM + i], "F16 rounding " + what);
      assertSameBits(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(x)), roundedBf16[FROM + i],
          "BF16 rounding " + what);
    }
    for (int i = 0; i < FROM; i++) {
      assertSameBits(a[i], roundedF16[i], "before the range");
    }
  }

  /**
   * The sum of received bfloat16 words with the rank's own values rounded first ({@link Bf16Pairs#sum}) gives the
   * bits of the scalar steps one after the other, for edge cases, NaNs and a million random patterns, received
   * values read from an offset (two NaNs: a NaN).
   */
  @Test
  void shouldRoundOwnValuesThenSumAsTheScalarStepsDo() {
    float[] a = edgeAndRandomFloats();
    int n = a.length - FROM;
    short[] in = randomShorts(17, AT + n);
    float[] fused = a.clone();
    Bf16Pairs.sum(pairs(in, AT, n), in[AT + n - 1], 0, n, 0, n, fused, FROM, null, new float[1024], new float[1024],
        true, false);
    for (int i = 0; i < n; i++) {
      float x = a[FROM + i];
      float own = HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(x));
      float received = HalfFloats.bf16ToFloat(in[AT + i]);
      if (Float.isNaN(own) && Float.isNaN(received)) {
        // Which of two NaNs an addition keeps depends on the operands' order, which the JIT may swap.
        assertTrue(Float.isNaN(fused[FROM + i]), "element " + i + ": NaN + NaN");
        continue;
      }
      String what = "element " + i + " (0x" + Integer.toHexString(Float.floatToRawIntBits(x)) + " + bfloat16 0x"
          + Integer.toHexString(in[AT + i] & 0xFFFF) + ")";
      assertSameBits(own + received, fused[FROM + i], what);
    }
    for (int i = 0; i < FROM; i++) {
      assertSameBits(a[i], fused[i], "before the range");
    }
  }

  /**
   * The final sums of received bfloat16 words ({@link Bf16Pairs#sum}: the sums rounded to bfloat16; with the
   * rank's own values rounded first as well) give the bits of the scalar steps one after the other.
   */
  @Test
  void shouldSumThenRoundTheSumsAsTheScalarStepsDo() {
    float[] a = edgeAndRandomFloats();
    int n = a.length - FROM;
    short[] in = randomShorts(29, AT + n);
    float[] summed = a.clone();
    Bf16Pairs.sum(pairs(in, AT, n), in[AT + n - 1], 0, n, 0, n, summed, FROM, new float[FROM + n], null, null, false,
        true);
    float[] roundedFirst = a.clone();
    Bf16Pairs.sum(pairs(in, AT, n), in[AT + n - 1], 0, n, 0, n, roundedFirst, FROM, null, new float[1024],
        new float[1024], true, true);
    for (int i = 0; i < n; i++) {
      float x = a[FROM + i];
      float received = HalfFloats.bf16ToFloat(in[AT + i]);
      float own = HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(x));
      String what = "element " + i + " (0x" + Integer.toHexString(Float.floatToRawIntBits(x)) + " + bfloat16 0x"
          + Integer.toHexString(in[AT + i] & 0xFFFF) + ")";
      checkRoundedSum(x, received, summed[FROM + i], "sum then rounded, " + what);
      checkRoundedSum(own, received, roundedFirst[FROM + i], "own rounded, sum rounded, " + what);
    }
    for (int i = 0; i < FROM; i++) {
      assertSameBits(a[i], summed[i], "before the range");
      assertSameBits(a[i], roundedFirst[i], "before the range");
    }
  }

  /** {@code in[at, at+n)} as the bfloat16 wire's words ({@link Bf16Pairs}; an odd last value goes apart). */
  private static int[] pairs(short[] in, int at, int n) {
    int h = Bf16Pairs.words(n);
    int[] w = new int[h];
    for (int j = 0; j < h; j++) {
      w[j] = (in[at + j] & 0xFFFF) | in[at + h + j] << 16;
    }
    return w;
  }

  private static void checkRoundedSum(float x, float y, float got, String what) {
    if (Float.isNaN(x) && Float.isNaN(y)) {
      // Which of two NaNs an addition keeps depends on the operands' order, which the JIT may swap.
      assertTrue(Float.isNaN(got), what + ": NaN + NaN");
      return;
    }
    assertSameBits(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(x + y)), got, what);
  }
}
