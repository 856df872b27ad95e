package io.sparkcollective.core.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A rank of the same process reads a buffer-backed vector in place ({@link Elements#copyFrom},
 * {@link Elements#reduceFrom}) while its owner keeps moving other ranges of it to the wire: the reader's view
 * must not be taken from the owner's working position and limit, which change under it.
 */
@Timeout(60)
class ElementsSharedReadTest {
  private static final int LENGTH = 1 << 16;
  private static final long RUN_NANOS = 1_500_000_000L;

  @Test
  void shouldReadAVectorInPlaceWhileItsOwnerMovesOtherRangesOfIt() throws Exception {
    ByteBuffer ownerBytes = ByteBuffer.allocateDirect(LENGTH * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < LENGTH; i++) {
      ownerBytes.putFloat(4 * i, i);
    }
    Elements owner = Elements.open(DataBuffer.of(ownerBytes, DType.F32),
        new Scratch(), 0);
    ByteBuffer readerBytes = ByteBuffer.allocateDirect(LENGTH * 4).order(ByteOrder.LITTLE_ENDIAN);
    Scratch readerScratch = new Scratch();
    Elements reader = Elements.open(DataBuffer.of(readerBytes, DType.F32), readerScratch, 0);

    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> ownerFailed = new AtomicReference<>();
    // The owner sends the last quarter and the first half by turns, as the two-level all-reduce does with
    // the pieces of its blocks: its position and limit swing between the two ranges.
    Thread moving = new Thread(() -> {
      WireBuffer wire = new WireBuffer(LENGTH * 4, true);
      try {
        while (!stop.get()) {
          owner.write(3 * LENGTH / 4, LENGTH / 4, wire);
          owner.write(0, LENGTH / 2, wire);
        }
      } catch (Throwable t) {
        ownerFailed.set(t);
      }
    }, "owner");
    moving.start();
    long reads = 0;
    Throwable readFailed = null;
    try {
      long end = System.nanoTime() + RUN_NANOS;
      while (System.nanoTime() < end && ownerFailed.get() == null) {
        int off = (int) (reads % 4) * (LENGTH / 4);
        readerBytes.putFloat(4 * off, -1);
        if (reads % 8 < 4) {
          reader.copyFrom(owner, off, LENGTH / 4);
        } else {
          // The range holds the owner's values already (copied before) but for its first: MAX restores it.
          reader.reduceFrom(owner, off, LENGTH / 4, ReduceOp.MAX, readerScratch);
        }
        assertEquals(off, readerBytes.getFloat(4 * off), "element " + off + " after read " + reads);
        reads++;
      }
    } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
      readFailed = e;
    } finally {
      stop.set(true);
      moving.join(10_000);
    }
    assertNull(readFailed, "a read in place failed after " + reads + " reads: " + readFailed);
    assertNull(ownerFailed.get(), "the owner failed while ranks of its process read it: " + ownerFailed.get());
    for (int i = 0; i < LENGTH; i++) {
      assertEquals(i, readerBytes.getFloat(4 * i), "element " + i);
    }
  }
}
