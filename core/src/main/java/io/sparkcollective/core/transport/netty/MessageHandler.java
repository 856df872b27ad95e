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
      String bad = dispatch(endpoint, remoteKey, in.readByte(), in);
      if (bad != null) {
        closeReason = bad;
        ctx.close();
      }
    } finally {
      in.release();
    }
  }

  /**
   * Hands one message of type {@code type} ({@code in} just past the type byte) to the endpoint; returns why
   * the connection must be closed (unknown type, truncated message), else null. Shared by both kinds of
   * connection.
   */
  static String dispatch(NettyEndpoint endpoint, String remoteKey, byte type, ByteBuf in) {
    try {
      switch (type) {
        case WireFormat.DATA:
          endpoint.onData(remoteKey, in);
          return null;
        case WireFormat.ABORT: {
          long group = in.readLongLE();
          int source = in.readIntLE();
          int dest = in.readIntLE();
          int origin = in.readIntLE();
          endpoint.onAbort(group, source, dest, origin, WireFormat.readString(in));
          return null;
        }
        case WireFormat.LEAVE:
          endpoint.onLeave(in.readLongLE(), in.readIntLE(), in.readIntLE());
          return null;
        case WireFormat.JOIN:
          endpoint.onJoin(remoteKey, in.readLongLE(), in.readIntLE(), in.readIntLE(), in.readIntLE());
          return null;
        case WireFormat.REFUSE_JOIN: {
          long group = in.readLongLE();
          int source = in.readIntLE();
          int dest = in.readIntLE();
          endpoint.onJoinRefused(group, source, dest, WireFormat.readString(in));
          return null;
        }
        case WireFormat.HEARTBEAT:
          return null;
        case WireFormat.SHM_OFFER:
          // A connection Netty's threads read takes its payloads over the socket: not mapping the ring
          // leaves the sender sending them there.
          return null;
        default:
          LOG.warn("{}: unknown message type {} from {}; closing the connection", endpoint.addressKey(), type,
              remoteKey);
          return "it sent an unknown message type " + type;
      }
    } catch (IndexOutOfBoundsException e) {
      LOG.warn("{}: truncated message from {}; closing the connection", endpoint.addressKey(), remoteKey);
      return "it sent a truncated message";
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
