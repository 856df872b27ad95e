package io.sparkcollective.core.transport.tcp.link;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.FramePool;

/**
 * A frame's buffer (header in its headroom, then the payload) as one Netty message, made once per frame and
 * reused for every send: writing it allocates nothing and copies nothing. When Netty releases it after the
 * write (or on failure), the frame goes back to the pool instead of the memory being freed; the next send
 * revives it.
 */
public final class FrameMessage extends UnpooledUnsafeDirectByteBuf implements Frame.Attachment {
  private final Frame frame;
  private final FramePool pool;

  private FrameMessage(Frame frame, FramePool pool) {
    super(UnpooledByteBufAllocator.DEFAULT, frame.payload().withHeadroom().duplicate().clear(),
        frame.payload().withHeadroom().capacity());
    this.frame = frame;
    this.pool = pool;
  }

  /** The message of {@code frame}, ready to be filled from index 0; the caller owns its one reference. */
  public static FrameMessage of(Frame frame, FramePool pool) {
    Frame.Attachment a = frame.attachment();
    FrameMessage m;
    if (a instanceof FrameMessage) {
      m = (FrameMessage) a;
      m.setRefCnt(1);
    } else {
      m = new FrameMessage(frame, pool);
      frame.attach(m);
    }
    m.clear();
    return m;
  }

  @Override
  protected void deallocate() {
    // The memory belongs to the frame, which lives on in the pool.
    pool.release(frame);
  }
}
