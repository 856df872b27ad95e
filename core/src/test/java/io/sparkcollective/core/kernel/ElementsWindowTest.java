package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A segment written into a window on other memory (the place in a peer's shared-memory ring a transport lends
 * a frame on its way) lands at the window's start, as the bytes it writes into a frame of its own, and touches
 * nothing before or after it: for every element type and the half-precision wire.
 */
@Timeout(60)
class ElementsWindowTest {
  private static final int LENGTH = 3000;
  private static final int OFF = 517;
  private static final int N = 1234;
  private static final int START = 136;
  private static final byte FILL = 0x5A;

  @Test
  void shouldWriteASegmentAtTheWindowsStartAndNowhereElse() {
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
    ByteBuffer want = ByteBuffer.allocate(N * 8).order(ByteOrder.LITTLE_ENDIAN);
    for (int k = 0; k < N; k++) {
      want.putFloat(f[OFF + k]);
    }
    check("F32", () -> Elements.open(DataBuffer.of(f.clone()), new Scratch(), 0), want.flip());
    want.clear();
    for (int k = 0; k < N; k++) {
      want.putDouble(d[OFF + k]);
    }
    check("F64", () -> Elements.open(DataBuffer.of(d.clone()), new Scratch(), 0), want.flip());
    want.clear();
    for (int k = 0; k < N; k++) {
      want.putInt(ints[OFF + k]);
    }
    check("I32", () -> Elements.open(DataBuffer.of(ints.clone()), new Scratch(), 0), want.flip());
    want.clear();
    for (int k = 0; k < N; k++) {
      want.putLong(longs[OFF + k]);
    }
    check("I64", () -> Elements.open(DataBuffer.of(longs.clone()), new Scratch(), 0), want.flip());
    check("bytes", () -> Elements.ofBytes(bytes.clone()), ByteBuffer.wrap(bytes, OFF, N));

    // A little-endian direct buffer (a Java task's, or a Python worker's segment) is written from where it lies.
    ByteBuffer direct = ByteBuffer.allocateDirect(LENGTH * 4).order(ByteOrder.LITTLE_ENDIAN);
    direct.asFloatBuffer().put(f);
    want.clear();
    for (int k = 0; k < N; k++) {
      want.putFloat(f[OFF + k]);
    }
    check("F32 buffer", () -> Elements.open(DataBuffer.of(direct, DType.F32), new Scratch(), 0), want.flip());

    // bfloat16 on the wire: the same 16-bit values as into a frame of its own (whose conversion the half-precision
    // tests check against the scalar reference).
    Elements own = Elements.openReduce(DataBuffer.of(f.clone()), DType.BF16, new Scratch(), 0);
    own.beginWire();
    WireBuffer frame = new WireBuffer(N * 4, true);
    own.write(OFF, N, frame);
    check("bfloat16 wire", () -> {
      Elements e = Elements.openReduce(DataBuffer.of(f.clone()), DType.BF16, new Scratch(), 0);
      e.beginWire();
      return e;
    }, frame.bytes().duplicate().clear().limit(frame.size()));
  }

  /** Writes [OFF, OFF + N) of a fresh vector into a window at START of filled memory and compares. */
  private static void check(String what, Supplier<Elements> open, ByteBuffer expected) {
    Elements e = open.get();
    ByteBuffer memory = ByteBuffer.allocateDirect(START + N * 8 + 64).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < memory.capacity(); i++) {
      memory.put(i, FILL);
    }
    WireBuffer window = new WireBuffer(memory);
    window.start(START);
    e.write(OFF, N, window);
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
  }
}
