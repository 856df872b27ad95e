package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.Promise;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The two sides of {@link SecretHandshake} as channel handlers; on success they install the message handler. */
final class HandshakeHandlers {
  private static final Logger LOG = LoggerFactory.getLogger(HandshakeHandlers.class);

  private HandshakeHandlers() {}

  private static void send(ChannelHandlerContext ctx, byte type, byte[]... parts) {
    ByteBuf out = ctx.alloc().buffer();
    WireFormat.begin(out, type);
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    WireFormat.finish(out, 0);
    ctx.writeAndFlush(out);
  }

  private static void refuse(ChannelHandlerContext ctx, String reason) {
    ByteBuf out = ctx.alloc().buffer();
    WireFormat.begin(out, WireFormat.REFUSE);
    WireFormat.writeString(out, reason);
    WireFormat.finish(out, 0);
    ctx.writeAndFlush(out).addListener(f -> ctx.close());
  }

  private static byte[] read(ByteBuf in, int n) {
    byte[] b = new byte[n];
    in.readBytes(b);
    return b;
  }

  /** Dialling side: HELLO, check CHALLENGE, RESPONSE, then ACCEPT or REFUSE. */
  static final class Client extends ChannelInboundHandlerAdapter {
    private final PipelineContext context;
    private final String remoteKey;
    private final Promise<Link> done;
    private final byte[] clientNonce = SecretHandshake.nonce();

    Client(PipelineContext context, String remoteKey, Promise<Link> done) {
      this.context = context;
      this.remoteKey = remoteKey;
      this.done = done;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      ByteBuf out = ctx.alloc().buffer();
      WireFormat.begin(out, WireFormat.HELLO);
      out.writeIntLE(SecretHandshake.VERSION);
      out.writeBytes(clientNonce);
      WireFormat.writeString(out, context.addressKey());
      WireFormat.finish(out, 0);
      ctx.writeAndFlush(out);
      ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ByteBuf in = (ByteBuf) msg;
      try {
        byte type = in.readByte();
        if (type == WireFormat.CHALLENGE && in.readableBytes() >= 4 + SecretHandshake.NONCE_BYTES
            + SecretHandshake.MAC_BYTES) {
          int version = in.readIntLE();
          byte[] serverNonce = read(in, SecretHandshake.NONCE_BYTES);
          byte[] serverMac = read(in, SecretHandshake.MAC_BYTES);
          if (version != SecretHandshake.VERSION) {
            fail(ctx, "endpoint " + remoteKey + " speaks protocol version " + version + ", this one "
                + SecretHandshake.VERSION);
          } else if (!SecretHandshake.matches(context.handshake.serverMac(clientNonce, serverNonce), serverMac)) {
            fail(ctx, "endpoint " + remoteKey + " failed authentication (it does not know the shared secret)");
          } else {
            send(ctx, WireFormat.RESPONSE, context.handshake.clientMac(serverNonce, clientNonce));
          }
        } else if (type == WireFormat.ACCEPT) {
          if (context.adopter != null) {
            ctx.pipeline().remove(this);
            context.detach(ctx.channel(), remoteKey, true, done);
          } else {
            MessageHandler messages = new MessageHandler(context, remoteKey, true);
            ctx.pipeline().replace(this, "messages", messages);
            done.trySuccess(messages.link());
          }
        } else if (type == WireFormat.REFUSE) {
          fail(ctx, "endpoint " + remoteKey + " refused the connection: " + WireFormat.readString(in));
        } else {
          fail(ctx, "endpoint " + remoteKey + " sent message type " + type + " during the handshake");
        }
      } finally {
        in.release();
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      done.tryFailure(new CollectiveAuthenticationException(
          "endpoint " + remoteKey + " closed the connection during the handshake"));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      done.tryFailure(cause);
      ctx.close();
    }

    private void fail(ChannelHandlerContext ctx, String why) {
      LOG.warn("{}: {}", context.addressKey(), why);
      done.tryFailure(new CollectiveAuthenticationException(why));
      ctx.close();
    }
  }

  /** Listening side: expects HELLO, sends CHALLENGE, checks RESPONSE, answers ACCEPT or REFUSE. */
  static final class Server extends ChannelInboundHandlerAdapter {
    private final PipelineContext context;
    private byte[] clientNonce;
    private byte[] serverNonce;
    private String remoteKey;

    Server(PipelineContext context) {
      this.context = context;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ByteBuf in = (ByteBuf) msg;
      try {
        byte type = in.readByte();
        if (type == WireFormat.HELLO && clientNonce == null && in.readableBytes() >= 4 + SecretHandshake.NONCE_BYTES) {
          int version = in.readIntLE();
          clientNonce = read(in, SecretHandshake.NONCE_BYTES);
          remoteKey = WireFormat.readString(in);
          if (version != SecretHandshake.VERSION) {
            reject(ctx, "protocol version " + version + " is not supported; this endpoint speaks version "
                + SecretHandshake.VERSION);
            return;
          }
          serverNonce = SecretHandshake.nonce();
          ByteBuf out = ctx.alloc().buffer();
          WireFormat.begin(out, WireFormat.CHALLENGE);
          out.writeIntLE(SecretHandshake.VERSION);
          out.writeBytes(serverNonce);
          out.writeBytes(context.handshake.serverMac(clientNonce, serverNonce));
          WireFormat.finish(out, 0);
          ctx.writeAndFlush(out);
        } else if (type == WireFormat.RESPONSE && serverNonce != null
            && in.readableBytes() == SecretHandshake.MAC_BYTES) {
          byte[] mac = read(in, SecretHandshake.MAC_BYTES);
          if (!SecretHandshake.matches(context.handshake.clientMac(serverNonce, clientNonce), mac)) {
            reject(ctx, "authentication failed: wrong shared secret");
            return;
          }
          if (context.adopter != null) {
            // No read after ACCEPT: the dialling side speaks next, and by then the socket is no longer Netty's.
            ctx.channel().config().setAutoRead(false);
            ByteBuf out = ctx.alloc().buffer();
            WireFormat.begin(out, WireFormat.ACCEPT);
            WireFormat.finish(out, 0);
            io.netty.channel.Channel ch = ctx.channel();
            String key = remoteKey;
            ctx.writeAndFlush(out).addListener(f -> {
              if (f.isSuccess()) {
                context.detach(ch, key, false, null);
              } else {
                ch.close();
              }
            });
            ctx.pipeline().remove(this);
          } else {
            ctx.pipeline().replace(this, "messages", new MessageHandler(context, remoteKey, false));
            send(ctx, WireFormat.ACCEPT);
          }
        } else {
          reject(ctx, "unexpected message type " + type + " during the handshake");
        }
      } finally {
        in.release();
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      LOG.warn("{}: handshake with {} failed: {}", context.addressKey(), ctx.channel().remoteAddress(),
          cause.toString());
      ctx.close();
    }

    private void reject(ChannelHandlerContext ctx, String why) {
      LOG.warn("{}: refused connection from {} ({}): {}", context.addressKey(), ctx.channel().remoteAddress(),
          remoteKey, why);
      context.refusals.incrementAndGet();
      refuse(ctx, why);
    }
  }
}
