package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.transport.tcp.link.MessageTags;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;

/**
 * Seals the messages an authenticated connection writes (DATA too if its protection says so), on the
 * connection's event loop, so in exactly the order they leave: the peer's count of sealed messages stays in
 * step with this one's.
 */
final class TagSealer extends ChannelOutboundHandlerAdapter {
  private final MessageSealer outgoing;

  TagSealer(MessageSealer outgoing) {
    this.outgoing = outgoing;
  }

  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    if (msg instanceof ByteBuf) {
      ByteBuf b = (ByteBuf) msg;
      if (b.readableBytes() > WireFormat.TYPE_OFFSET
          && MessageTags.sealed(b.getByte(b.readerIndex() + WireFormat.TYPE_OFFSET), outgoing)) {
        MessageTags.seal(b, outgoing);
      }
    }
    ctx.write(msg, promise);
  }
}
