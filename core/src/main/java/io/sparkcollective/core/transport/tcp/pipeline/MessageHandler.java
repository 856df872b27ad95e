package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkKeys;
import io.sparkcollective.core.transport.tcp.link.MessageDispatcher;
import io.sparkcollective.core.transport.tcp.link.RateLimitedLog;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the messages of an authenticated connection and hands them to the endpoint's groups (through the
 * {@link MessageDispatcher}); closes a connection that has been silent past the heartbeat timeout. Runs on
 * the connection's I/O thread; owns each message buffer until it returns (released in {@code finally}).
 */
final class MessageHandler extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(MessageHandler.class);

  private final PipelineContext context;
  private final String remoteKey;
  private final boolean outbound;
  private volatile Link link;
  /** The header of the DATA message being read (this connection's event loop only). */
  private final DataHeader header = new DataHeader();
  private volatile String closeReason;
  private final LinkKeys keys;
  /** Whether a message came in yet (this connection's event loop only). */
  private boolean heard;

  MessageHandler(PipelineContext context, String remoteKey, boolean outbound, LinkKeys keys) {
    this.context = context;
    this.remoteKey = remoteKey;
    this.outbound = outbound;
    this.keys = keys;
  }

  /** The connection as a link; set once the handler is in its pipeline. */
  Link link() {
    return link;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    // Writes start at the pipeline's tail, so a sealer anywhere in it tags every message written from now on.
    ctx.pipeline().addBefore(ctx.name(), "tags", new TagSealer(keys.outgoing));
    link = new ChannelLink(ctx.channel());
    context.channelReady(remoteKey, ctx.channel(), link);
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    ByteBuf in = (ByteBuf) msg;
    try {
      if (!in.isReadable()) {
        closeReason = "it sent an empty message";
        context.refusalLog.warn(RateLimitedLog.host(remoteKey), "{}: {} from {}; closing the connection",
            context.addressKey(), closeReason, remoteKey);
        ctx.close();
        return;
      }
      byte type = in.readByte();
      if (!heard) {
        heard = true;
        if (!outbound) {
          context.links.heard(link, remoteKey);
        }
      }
      String bad = MessageDispatcher.dispatch(context.inbound, remoteKey, type, in, header, keys.incoming);
      if (bad == null && type == WireFormat.SHM_OFFER && in.readableBytes() >= Long.BYTES) {
        // Netty's threads read this connection: payloads keep coming over the socket, and the sender may
        // delete its ring file now instead of keeping it for the connection's life.
        link.write(ControlMessages.sharedMemoryDecline(ctx.alloc(), in.getLongLE(in.readerIndex())));
      }
      if (bad != null) {
        context.refusalLog.warn(RateLimitedLog.host(remoteKey), "{}: {} from {}; closing the connection",
            context.addressKey(), bad, remoteKey);
        closeReason = bad;
        ctx.close();
      }
    } finally {
      in.release();
    }
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
    if (evt instanceof IdleStateEvent) {
      if (((IdleStateEvent) evt).state() == IdleState.READER_IDLE) {
        closeReason = "nothing received for " + context.config.heartbeatTimeoutMs() + " ms (no heartbeat)";
        context.refusalLog.warn(RateLimitedLog.host(remoteKey), "{}: {} from {}; closing the connection",
            context.addressKey(), closeReason, remoteKey);
        ctx.close();
      }
      return;
    }
    ctx.fireUserEventTriggered(evt);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    String why = closeReason != null ? closeReason : "connection closed";
    context.links.lost(remoteKey, link, outbound, why);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    closeReason = cause.toString();
    LOG.debug("{}: connection to {} failed", context.addressKey(), remoteKey, cause);
    ctx.close();
  }
}
