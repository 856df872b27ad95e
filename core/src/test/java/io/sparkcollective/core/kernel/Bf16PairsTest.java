package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The bfloat16 wire's word layout and its lane-wise conversions against the element-by-element conversions of
 * {@link HalfFloats} (checked against an exact reference in {@link HalfFloatsTest}): every value, NaNs and ties
 * included, and every split of a segment into ranges.
 */
@Timeout(120)
class Bf16PairsTest {
  /** Low halves that decide the rounding: exact, just below, at and just above the tie, the most. */
  private static final int[] LOW = {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF};

  @Test
  void shouldRoundEveryTopHalfAsTheScalarConversionDoes() {
    for (int top = 0; top < 0x10000; top++) {
      for (int low : LOW) {
        int bits = top << 16 | low;
        int want = HalfFloats.floatToBf16(Float.intBitsToFloat(bits)) << 16;
        assertEquals(want, Bf16Pairs.rounded(bits), () -> Integer.toHexString(bits));
      }
    }
  }

  /** Random floats with NaNs (quiet, signalling, either sign), infinities, zeros, subnormals and ties. */
  private static float[] values(int n, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    float[] a = new float[n];
    for (int i = 0; i < n; i++) {
      int kind = r.nextInt(8);
      int bits = r.nextInt();
      if (kind == 0) {
        bits = (bits & 0x8000FFFF) | 0x7F800000 | (r.nextBoolean() ? 0x400000 : 0x10000);
      } else if (kind == 1) {
        bits = (bits & 0xFFFF0000) | LOW[r.nextInt(LOW.length)];
      } else if (kind == 2) {
        bits = (bits & 0x807FFFFF) | (r.nextBoolean() ? 0 : 0x7F800000 & ~0x7FFFFF);
      }
      a[i] = Float.intBitsToFloat(bits);
    }
    return a;
  }

  @Test
  void shouldPairElementsOfTheTwoHalvesInEachWordAndGiveThemBack() {
    for (int n : new int[] {0, 1, 2, 3, 4, 5, 63, 64, 65, 1023, 1024, 1025, 4099}) {
      int off = 7;
      float[] a = values(off + n + 5, n);
      int h = Bf16Pairs.words(n);
      int[] w = new int[h];
      Bf16Pairs.narrow(a, off, h, w);
      for (int j = 0; j < h; j++) {
        int lo = HalfFloats.floatToBf16(a[off + j]) & 0xFFFF;
        int hi = HalfFloats.floatToBf16(a[off + h + j]) & 0xFFFF;
        assertEquals(hi << 16 | lo, w[j], "n " + n + ", word " + j);
      }
      short last = (n & 1) != 0 ? HalfFloats.floatToBf16(a[off + n - 1]) : 0;
      // Every range of the segment, crossing the halves and ending at the odd last element or not.
      int base = 3;
      for (int from = 0; from <= n; from += Math.max(1, n / 7)) {
        for (int len = 0; from + len <= n; len += Math.max(1, n / 5)) {
          float[] out = new float[base + off + n + 2];
          java.util.Arrays.fill(out, -1.5f);
          Bf16Pairs.unpack(w, last, off, n, off + from, len, out, base);
          for (int e = 0; e < n; e++) {
            float want = e >= from && e < from + len ? HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(a[off + e]))
                : -1.5f;
            assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(out[base + off + e]),
                "n " + n + ", range [" + from + ", " + (from + len) + "), element " + e);
          }
        }
      }
      float[] rounded = a.clone();
      Bf16Pairs.round(rounded, off, n);
      float[] reference = a.clone();
      HalfFloats.roundToBf16(reference, off, n);
      for (int i = 0; i < a.length; i++) {
        assertEquals(Float.floatToRawIntBits(reference[i]), Float.floatToRawIntBits(rounded[i]), "rounded " + i);
      }
    }
  }

  @Test
  void shouldWriteTheDocumentedLayoutIntoAFrame() {
    for (int n : new int[] {1, 6, 7, 1025}) {
      float[] a = values(n + 10, 100 + n);
      Elements e = Elements.openReduce(DataBuffer.of(a.clone()), DType.BF16, new Scratch(), 0);
      e.beginWire();
      WireBuffer frame = new WireBuffer(n * 4, true);
      e.write(5, n, frame);
      assertEquals(2 * n, frame.size(), "payload bytes");
      ByteBuffer b = frame.bytes().duplicate().order(ByteOrder.LITTLE_ENDIAN);
      int h = n / 2;
      for (int j = 0; j < h; j++) {
        assertEquals(HalfFloats.floatToBf16(a[5 + j]), b.getShort(4 * j), "low half of word " + j);
        assertEquals(HalfFloats.floatToBf16(a[5 + h + j]), b.getShort(4 * j + 2), "high half of word " + j);
      }
      if ((n & 1) != 0) {
        assertEquals(HalfFloats.floatToBf16(a[5 + n - 1]), b.getShort(4 * h), "the odd last value");
      }
      // Read back into another vector: the rounded values, in place.
      float[] back = new float[n + 10];
      Elements r = Elements.openReduce(DataBuffer.of(back), DType.BF16, new Scratch(), 0);
      r.read(5, n, frame);
      for (int i = 0; i < n; i++) {
        assertEquals(Float.floatToRawIntBits(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(a[5 + i]))),
            Float.floatToRawIntBits(back[5 + i]), "read back " + i);
      }
    }
  }
}
