package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.sparkcollective.core.transport.tcp.link.Link;

/** A connection whose bytes Netty's event loop moves (TLS, or {@code transport.progress=eventLoop}). */
final class ChannelLink implements Link {
  private final Channel ch;

  ChannelLink(Channel ch) {
    this.ch = ch;
  }

  @Override
  public void write(ByteBuf msg) {
    ch.writeAndFlush(msg, ch.voidPromise());
  }

  @Override
  public String ends() {
    return Link.ends(ch.localAddress(), ch.remoteAddress());
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
}
