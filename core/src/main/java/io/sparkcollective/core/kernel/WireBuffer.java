package io.sparkcollective.core.kernel;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/**
 * A fixed-capacity little-endian byte buffer that carries one segment of payload, with typed views made
 * once and reused, so that moving a segment in or out of a primitive array is one bulk copy and allocates
 * nothing. Owned by whoever holds the frame that contains it (see {@code transport.Frame}).
 */
public final class WireBuffer {
  private final ByteBuffer bytes;
  private final ByteBuffer whole;
  private final int headroom;
  private final int tailroom;
  private ByteBuffer view;
  private ByteBuffer tailView;
  private ShortBuffer shorts;
  private FloatBuffer floats;
  private DoubleBuffer doubles;
  private IntBuffer ints;
  private LongBuffer longs;
  private int size;
  /** Where the payload starts in {@link #bytes()} (a multiple of 8; 0 except for a window on lent memory). */
  private int start;

  public WireBuffer(int capacity, boolean direct) {
    this(capacity, direct, 0);
  }

  /**
   * A window on existing little-endian memory (a shared-memory ring): the payload is {@code [start(),
   * start() + size())} of {@code memory}; read from, or written from {@code start()} when the window is the
   * place a transport lent a segment on its way to a peer.
   */
  public WireBuffer(ByteBuffer memory) {
    this.whole = memory.duplicate().clear().order(ByteOrder.LITTLE_ENDIAN);
    this.headroom = 0;
    this.tailroom = 0;
    this.bytes = whole.slice().order(ByteOrder.LITTLE_ENDIAN);
  }

  /**
   * A buffer with {@code headroom} bytes before the payload, where a transport writes its message header so
   * that header and payload leave in one piece without a copy.
   */
  public WireBuffer(int capacity, boolean direct, int headroom) {
    this(capacity, direct, headroom, 0);
  }

  /**
   * As {@link #WireBuffer(int, boolean, int)}, with {@code tailroom} bytes after the payload area too, where a
   * transport appends what follows a payload on the wire (a message's tag).
   */
  public WireBuffer(int capacity, boolean direct, int headroom, int tailroom) {
    int total = headroom + capacity + tailroom;
    ByteBuffer b = direct ? ByteBuffer.allocateDirect(total) : ByteBuffer.allocate(total);
    this.whole = b.order(ByteOrder.LITTLE_ENDIAN);
    this.headroom = headroom;
    this.tailroom = tailroom;
    this.bytes = b.duplicate().position(headroom).limit(headroom + capacity).slice().order(ByteOrder.LITTLE_ENDIAN);
  }

  /** The headroom, the payload area and the tailroom (capacity {@code headroom() + capacity() + tailroom()}). */
  public ByteBuffer withHeadroom() {
    return whole;
  }

  public int headroom() {
    return headroom;
  }

  /**
   * {@link #bytes()} from {@link #start()} to {@code start() + n}: one view kept for the owner's relative transfers, so
   * filling the buffer allocates nothing.
   */
  public ByteBuffer view(int n) {
    if (view == null) {
      view = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }
    view.clear().limit(start + n).position(start);
    return view;
  }

  /**
   * The first {@code n} payload bytes and the {@code extra} bytes after them (at most {@link #tailroom()} past the
   * payload area), as one view kept for reuse: for reading a payload and what follows it on the wire in one go.
   */
  public ByteBuffer viewWithTail(int n, int extra) {
    if (extra > tailroom + capacity() - start - n || n < 0 || extra < 0) {
      throw new IllegalArgumentException(n + " payload bytes and " + extra + " more do not fit a buffer of "
          + capacity() + " bytes with " + tailroom + " after them");
    }
    if (tailView == null) {
      tailView = whole.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }
    tailView.clear().limit(headroom + start + n + extra).position(headroom + start);
    return tailView;
  }

  public int tailroom() {
    return tailroom;
  }

  /** Byte offset of the payload in {@link #bytes()}: 0 for a frame's own memory. */
  public int start() {
    return start;
  }

  /** Moves the window to {@code start} (a multiple of 8). */
  public void start(int start) {
    if ((start & 7) != 0 || start < 0 || start > bytes.capacity()) {
      throw new IllegalArgumentException("window start " + start);
    }
    this.start = start;
  }

  /** The whole buffer; payload is {@code [0, size())}. Callers must not change its order. */
  public ByteBuffer bytes() {
    return bytes;
  }

  public int capacity() {
    return bytes.capacity();
  }

  /** Payload bytes. */
  public int size() {
    return size;
  }

  public void size(int size) {
    if (size < 0 || start + size > bytes.capacity()) {
      throw new IllegalArgumentException("size " + size + " outside [0, " + bytes.capacity() + "]");
    }
    this.size = size;
  }

  ShortBuffer shorts() {
    if (shorts == null) {
      shorts = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN).clear().asShortBuffer();
    }
    return shorts;
  }

  FloatBuffer floats() {
    if (floats == null) {
      floats = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN).clear().asFloatBuffer();
    }
    return floats;
  }

  DoubleBuffer doubles() {
    if (doubles == null) {
      doubles = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN).clear().asDoubleBuffer();
    }
    return doubles;
  }

  IntBuffer ints() {
    if (ints == null) {
      ints = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN).clear().asIntBuffer();
    }
    return ints;
  }

  LongBuffer longs() {
    if (longs == null) {
      longs = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN).clear().asLongBuffer();
    }
    return longs;
  }
}
