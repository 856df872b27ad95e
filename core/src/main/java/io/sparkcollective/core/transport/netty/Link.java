package io.sparkcollective.core.transport.netty;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;

/** One authenticated connection to another endpoint, whoever moves its bytes. */
interface Link {
  /** Queues {@code msg} for sending (ownership passes here; it is released once written or on failure). */
  void write(ByteBuf msg);

  boolean isActive();

  void close();

  /** A connection whose bytes Netty's event loop moves (TLS, or {@code transport.progress=eventLoop}). */
  static Link of(Channel ch) {
    return new Link() {
      @Override
      public void write(ByteBuf msg) {
        ch.writeAndFlush(msg, ch.voidPromise());
      }

      @Override
      public boolean isActive() {
        return ch.isActive();
      }

      @Override
      public void close() {
        ch.close();
      }

      @Override
      public String toString() {
        return ch.toString();
      }
    };
  }
}
