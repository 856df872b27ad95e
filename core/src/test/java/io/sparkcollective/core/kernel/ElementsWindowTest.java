package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A segment written into a window on other memory (the place in a peer's shared-memory ring a transport lends
 * a frame on its way) lands at the window's start, as the bytes it writes into a frame of its own, and touches
 * nothing before or after it: for every element type and the half-precision wire. Read back from the window, a
 * segment gives the values it was written from. Segments of one element up to long ones (the JDK moves a few
 * bytes element by element and more through a memory copy).
 */
@Timeout(60)
class ElementsWindowTest {
  private static final int LENGTH = 3000;
  private static final int OFF = 517;
  private static final int START = 136;
  private static final byte FILL = 0x5A;

  @ParameterizedTest(name = "{0} elements")
  @ValueSource(ints = {1, 2, 5, 1234})
  void shouldWriteASegmentAtTheWindowsStartAndNowhereElse(int n) {
    SplittableRandom rnd = new SplittableRandom(11);
    float[] f = new float[LENGTH];
    for (int i = 0; i < LENGTH; i++) {
      f[i] = (float) rnd.nextDouble(-1e6, 1e6);
    }
    double[] d = rnd.doubles(LENGTH, -1e9, 1e9).toArray();
    int[] ints = rnd.ints(LENGTH).toArray();
    long[] longs = rnd.longs(LENGTH).toArray();
    byte[] bytes = new byte[LENGTH];
    rnd.nextBytes(bytes);

    // Arrays: the window must hold the little-endian encoding of the elements, computed here element by element.
    ByteBuffer want = ByteBuffer.allocate(n * 8).order(ByteOrder.LITTLE_ENDIAN);
    for (int k = 0; k < n; k++) {
      want.putFloat(f[OFF + k]);
    }
    WireBuffer w = check("F32", n, () -> Elements.open(DataBuffer.of(f.clone()), new Scratch(), 0), want.flip());
    float[] f2 = new float[LENGTH];
    Elements.open(DataBuffer.of(f2), new Scratch(), 0).read(OFF, n, w);
    assertArrayEquals(Arrays.copyOfRange(f, OFF, OFF + n), Arrays.copyOfRange(f2, OFF, OFF + n), "F32 read back");
    want.clear();
    for (int k = 0; k < n; k++) {
      want.putDouble(d[OFF + k]);
    }
    w = check("F64", n, () -> Elements.open(DataBuffer.of(d.clone()), new Scratch(), 0), want.flip());
    double[] d2 = new double[LENGTH];
    Elements.open(DataBuffer.of(d2), new Scratch(), 0).read(OFF, n, w);
    assertArrayEquals(Arrays.copyOfRange(d, OFF, OFF + n), Arrays.copyOfRange(d2, OFF, OFF + n), "F64 read back");
    want.clear();
    for (int k = 0; k < n; k++) {
      want.putInt(ints[OFF + k]);
    }
    w = check("I32", n, () -> Elements.open(DataBuffer.of(ints.clone()), new Scratch(), 0), want.flip());
    int[] i2 = new int[LENGTH];
    Elements.open(DataBuffer.of(i2), new Scratch(), 0).read(OFF, n, w);
    assertArrayEquals(Arrays.copyOfRange(ints, OFF, OFF + n), Arrays.copyOfRange(i2, OFF, OFF + n), "I32 read back");
    want.clear();
    for (int k = 0; k < n; k++) {
      want.putLong(longs[OFF + k]);
    }
    w = check("I64", n, () -> Elements.open(DataBuffer.of(longs.clone()), new Scratch(), 0), want.flip());
    long[] l2 = new long[LENGTH];
    Elements.open(DataBuffer.of(l2), new Scratch(), 0).read(OFF, n, w);
    assertArrayEquals(Arrays.copyOfRange(longs, OFF, OFF + n), Arrays.copyOfRange(l2, OFF, OFF + n), "I64 read back");
    check("bytes", n, () -> Elements.ofBytes(bytes.clone()), ByteBuffer.wrap(bytes, OFF, n));

    // A little-endian direct buffer (a Java task's, or a Python worker's segment) is written from where it lies.
    ByteBuffer direct = ByteBuffer.allocateDirect(LENGTH * 4).order(ByteOrder.LITTLE_ENDIAN);
    direct.asFloatBuffer().put(f);
    want.clear();
    for (int k = 0; k < n; k++) {
      want.putFloat(f[OFF + k]);
    }
    check("F32 buffer", n, () -> Elements.open(DataBuffer.of(direct, DType.F32), new Scratch(), 0), want.flip());

    // bfloat16 on the wire: the same 16-bit values as into a frame of its own (whose conversion the half-precision
    // tests check against the scalar reference).
    Elements own = Elements.openReduce(DataBuffer.of(f.clone()), DType.BF16, new Scratch(), 0);
    own.beginWire();
    WireBuffer frame = new WireBuffer(n * 4, true);
    own.write(OFF, n, frame);
    check("bfloat16 wire", n, () -> {
      Elements e = Elements.openReduce(DataBuffer.of(f.clone()), DType.BF16, new Scratch(), 0);
      e.beginWire();
      return e;
    }, frame.bytes().duplicate().clear().limit(frame.size()));
  }

  /**
   * Writes [OFF, OFF + n) of a fresh vector into a window at START of filled memory, compares, and returns the
   * window.
   */
  private static WireBuffer check(String what, int n, Supplier<Elements> open, ByteBuffer expected) {
    Elements e = open.get();
    ByteBuffer memory = ByteBuffer.allocateDirect(START + n * 8 + 64).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < memory.capacity(); i++) {
      memory.put(i, FILL);
    }
    WireBuffer window = new WireBuffer(memory);
    window.start(START);
    e.write(OFF, n, window);
    int size = expected.remaining();
    assertEquals(size, window.size(), what + ": size");
    for (int i = 0; i < START; i++) {
      assertEquals(FILL, memory.get(i), what + ": byte " + i + " before the window's start was written");
    }
    for (int i = 0; i < size; i++) {
      assertEquals(expected.get(expected.position() + i), memory.get(START + i), what + ": segment byte " + i);
    }
    for (int i = START + size; i < memory.capacity(); i++) {
      assertEquals(FILL, memory.get(i), what + ": byte " + i + " after the segment was written");
    }
    return window;
  }
}
