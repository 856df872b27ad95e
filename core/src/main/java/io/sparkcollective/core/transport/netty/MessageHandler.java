package io.sparkcollective.core.transport.netty;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the messages of an authenticated connection and hands them to the endpoint; sends heartbeats on
 * an idle connection and closes one that has been silent past the timeout. Runs on the connection's I/O
 * thread; owns each message buffer until it returns (released in {@code finally}).
 */
final class MessageHandler extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(MessageHandler.class);

  private final NettyEndpoint endpoint;
  private final String remoteKey;
  private final boolean outbound;
  private volatile Link link;
  /** The header of the DATA message being read (this connection's event loop only). */
  private final DataHeader header = new DataHeader();
  private volatile String closeReason;

  MessageHandler(NettyEndpoint endpoint, String remoteKey, boolean outbound) {
    this.endpoint = endpoint;
    this.remoteKey = remoteKey;
    this.outbound = outbound;
  }

  /** The connection as a link; set once the handler is in its pipeline. */
  Link link() {
    return link;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    link = Link.of(ctx.channel());
    endpoint.channelReady(remoteKey, ctx.channel(), link);
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    ByteBuf in = (ByteBuf) msg;
    try {
      String bad = MessageDispatcher.dispatch(endpoint.registry(), endpoint.addressKey(), remoteKey, in.readByte(), in,
          header);
      if (bad != null) {
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
        closeReason = "nothing received for " + endpoint.config().heartbeatTimeoutMs() + " ms (no heartbeat)";
        LOG.warn("{}: {} from {}; closing the connection", endpoint.addressKey(), closeReason, remoteKey);
        ctx.close();
      }
      return;
    }
    ctx.fireUserEventTriggered(evt);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    String why = closeReason != null ? closeReason : "connection closed";
    endpoint.connectionLost(remoteKey, link, outbound, why);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    closeReason = cause.toString();
    LOG.debug("{}: connection to {} failed", endpoint.addressKey(), remoteKey, cause);
    ctx.close();
  }
}
