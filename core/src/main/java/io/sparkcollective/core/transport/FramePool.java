package io.sparkcollective.core.transport;

import io.sparkcollective.core.config.Tuning;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Recycles frames in power-of-two capacity classes from {@link #MIN_CAPACITY} up to the largest segment,
 * so that steady-state operations allocate no payload memory and small messages do not pin segment-sized
 * buffers. Thread-safe: frames are acquired on one thread and released on another.
 */
public final class FramePool {
  public static final int MIN_CAPACITY = Tuning.MIN_FRAME_BYTES;
  private static final int MIN_SHIFT = Integer.numberOfTrailingZeros(MIN_CAPACITY);

  private final ArrayDeque<Frame>[] free;
  private final int maxCapacity;
  private final AtomicLong outstanding = new AtomicLong();
  private final AtomicLong allocated = new AtomicLong();

  private final int headroom;
  private final int tailroom;

  public FramePool(int maxCapacity) {
    this(maxCapacity, 0, 0);
  }

  /**
   * A pool whose frames keep {@code headroom} bytes before the payload for a transport's header and
   * {@code tailroom} after it for what follows the payload on the wire.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  public FramePool(int maxCapacity, int headroom, int tailroom) {
    this.headroom = headroom;
    this.tailroom = tailroom;
    if (maxCapacity < MIN_CAPACITY) {
      throw new IllegalArgumentException("max frame capacity " + maxCapacity + " < " + MIN_CAPACITY);
    }
    int classes = classOf(maxCapacity) + 1;
    this.maxCapacity = MIN_CAPACITY << (classes - 1);
    this.free = new ArrayDeque[classes];
    for (int i = 0; i < classes; i++) {
      free[i] = new ArrayDeque<>();
    }
  }

  /** Largest payload a frame can carry. */
  public int maxCapacity() {
    return maxCapacity;
  }

  /** A frame whose payload holds at least {@code bytes}; the caller owns it. */
  public Frame acquire(int bytes) {
    if (bytes > maxCapacity) {
      throw new IllegalArgumentException("segment of " + bytes + " bytes exceeds the largest frame " + maxCapacity);
    }
    int c = classOf(bytes);
    Frame f;
    ArrayDeque<Frame> q = free[c];
    synchronized (q) {
      f = q.pollFirst();
    }
    if (f == null) {
      f = new Frame(MIN_CAPACITY << c, c, headroom, tailroom);
      allocated.incrementAndGet();
    }
    outstanding.incrementAndGet();
    f.payload().size(0);
    return f;
  }

  /** Returns a frame; it must not be used afterwards. */
  public void release(Frame f) {
    f.share(null); // a pooled frame must not keep another rank's vector alive
    f.giveBack();
    ArrayDeque<Frame> q = free[f.sizeClass()];
    synchronized (q) {
      q.addFirst(f);
    }
    outstanding.decrementAndGet();
  }

  /** Frames acquired and not yet released: 0 when idle, else a leak. */
  public long outstanding() {
    return outstanding.get();
  }

  /** Frames ever created (grows only while the pool warms up). */
  public long allocated() {
    return allocated.get();
  }

  private static int classOf(int bytes) {
    if (bytes <= MIN_CAPACITY) {
      return 0;
    }
    return 32 - Integer.numberOfLeadingZeros(bytes - 1) - MIN_SHIFT;
  }
}
