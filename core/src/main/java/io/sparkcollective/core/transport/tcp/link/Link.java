package io.sparkcollective.core.transport.tcp.link;

import io.netty.buffer.ByteBuf;

/**
 * One authenticated connection to another endpoint, whoever moves its bytes (Netty's pipeline or the
 * caller-driven I/O). What a link reads goes to an {@link Inbound}; that it opened or closed goes to a
 * {@link LinkListener}.
 */
public interface Link {
  /** Queues {@code msg} for sending (ownership passes here; it is released once written or on failure). */
  void write(ByteBuf msg);

  boolean isActive();

  void close();
}
