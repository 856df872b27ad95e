package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkKeys;
import io.sparkcollective.core.transport.tcp.link.PeerText;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The two sides of {@link SecretHandshake} as strict state machines: each side accepts exactly the next
 * message of the exchange, and anything else (another type, a malformed or oversized message, a message
 * after the last) ends the connection. On success the connection's {@link LinkKeys} are derived and the
 * connection goes on in its pipeline ({@link MessageHandler}) or to the socket adopter.
 *
 * <pre>
 *  HELLO     (16): version u32, protection u8, nonce 32 bytes, from: u16 length + UTF-8, to: u16 length + UTF-8
 *  CHALLENGE (17): version u32, nonce 32 bytes, proof 32 bytes
 *  RESPONSE  (18): proof 32 bytes
 *  ACCEPT    (19): empty
 *  REFUSE    (20): reason (UTF-8, rest)
 * </pre>
 */
final class HandshakeHandlers {
  /** The type an empty message (a length field of 0) is taken for: none, so it is refused like any unknown. */
  private static final byte EMPTY = -1;

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

  private static byte[] read(ByteBuf in, int n) {
    byte[] b = new byte[n];
    in.readBytes(b);
    return b;
  }

  private static void writeName(ByteBuf out, String name) {
    byte[] b = name.getBytes(StandardCharsets.UTF_8);
    out.writeShortLE(b.length).writeBytes(b);
  }

  /** A length-prefixed endpoint name, or null if it is malformed (too long, past the end, not host:port). */
  private static String readName(ByteBuf in) {
    if (in.readableBytes() < Short.BYTES) {
      return null;
    }
    int n = in.readUnsignedShortLE();
    if (n == 0 || n > SecretHandshake.MAX_NAME_BYTES || n > in.readableBytes()) {
      return null;
    }
    String s = in.readCharSequence(n, StandardCharsets.UTF_8).toString();
    int colon = s.lastIndexOf(':');
    if (colon <= 0 || colon == s.length() - 1 || !PeerText.escape(s).equals(s)) {
      return null;
    }
    for (int i = colon + 1; i < s.length(); i++) {
      if (!Character.isDigit(s.charAt(i))) {
        return null;
      }
    }
    return s;
  }

  /** After ACCEPT on a connection the event loop keeps: messages up to the wire's full limit. */
  private static void allowFullMessages(ChannelHandlerContext ctx) {
    if (ctx.pipeline().get("frames") != null) {
      ctx.pipeline().replace("frames", "frames", NettyPipelines.frameDecoder());
    }
  }

  /** Dialling side: HELLO; then exactly CHALLENGE (checked; RESPONSE sent); then exactly ACCEPT. */
  static final class Client extends ChannelInboundHandlerAdapter {
    private enum State { HELLO_SENT, RESPONSE_SENT, DONE }

    private final PipelineContext context;
    private final String remoteKey;
    private final Promise<Link> done;
    private final byte[] clientNonce = SecretHandshake.nonce();
    private State state = State.HELLO_SENT;
    private byte[] transcript;

    /** Dials {@code remoteKey}, the endpoint name the group gives for it; completes {@code done}. */
    Client(PipelineContext context, String remoteKey, Promise<Link> done) {
      this.context = context;
      this.remoteKey = remoteKey;
      this.done = done;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      SslHandler tls = ctx.pipeline().get(SslHandler.class);
      if (tls == null) {
        hello(ctx);
      } else {
        // HELLO once TLS is up, never queued inside the SslHandler before: a handshake that fails (an untrusted
        // certificate) would have to release it there, which Netty's handler does not always do.
        tls.handshakeFuture().addListener(f -> {
          if (f.isSuccess() && ctx.channel().isActive()) {
            hello(ctx);
          }
        });
      }
      ctx.fireChannelActive();
    }

    private void hello(ChannelHandlerContext ctx) {
      ByteBuf out = ctx.alloc().buffer();
      WireFormat.begin(out, WireFormat.HELLO);
      out.writeIntLE(SecretHandshake.VERSION);
      out.writeByte(context.protection().wireCode());
      out.writeBytes(clientNonce);
      writeName(out, context.addressKey());
      writeName(out, remoteKey);
      WireFormat.finish(out, 0);
      ctx.writeAndFlush(out);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ByteBuf in = (ByteBuf) msg;
      try {
        byte type = in.isReadable() ? in.readByte() : EMPTY;
        if (type == WireFormat.REFUSE && state != State.DONE) {
          fail(ctx, "endpoint " + remoteKey + " refused the connection: " + PeerText.escape(WireFormat.readString(in)));
        } else if (state == State.HELLO_SENT && type == WireFormat.CHALLENGE) {
          challenge(ctx, in);
        } else if (state == State.RESPONSE_SENT && type == WireFormat.ACCEPT && !in.isReadable()) {
          state = State.DONE;
          LinkKeys keys = LinkKeys.of(context.handshake, transcript, true, context.protection());
          if (context.adopter != null) {
            ctx.pipeline().remove(this);
            context.detach(ctx.channel(), remoteKey, true, keys, done);
          } else {
            allowFullMessages(ctx);
            MessageHandler messages = new MessageHandler(context, remoteKey, true, keys);
            ctx.pipeline().replace(this, "messages", messages);
            done.trySuccess(messages.link());
          }
        } else {
          fail(ctx, "endpoint " + remoteKey + " sent message type " + type + " of " + in.readableBytes()
              + " bytes during the handshake (expected " + (state == State.HELLO_SENT ? "CHALLENGE" : "ACCEPT")
              + ")");
        }
      } finally {
        in.release();
      }
    }

    private void challenge(ChannelHandlerContext ctx, ByteBuf in) {
      if (in.readableBytes() != Integer.BYTES + SecretHandshake.NONCE_BYTES + SecretHandshake.MAC_BYTES) {
        fail(ctx, "endpoint " + remoteKey + " sent a malformed challenge");
        return;
      }
      int version = in.readIntLE();
      byte[] serverNonce = read(in, SecretHandshake.NONCE_BYTES);
      byte[] proof = read(in, SecretHandshake.MAC_BYTES);
      if (version != SecretHandshake.VERSION) {
        fail(ctx, "endpoint " + remoteKey + " speaks protocol version " + version + ", this one "
            + SecretHandshake.VERSION);
        return;
      }
      transcript = SecretHandshake.transcript(version, context.protection(), clientNonce, serverNonce,
          context.addressKey(), remoteKey);
      if (!SecretHandshake.matches(context.handshake.serverProof(transcript), proof)) {
        fail(ctx, "endpoint " + remoteKey + " failed authentication (it does not know the shared secret, or "
            + "answered another endpoint's hello)");
        return;
      }
      state = State.RESPONSE_SENT;
      send(ctx, WireFormat.RESPONSE, context.handshake.clientProof(transcript));
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
      state = State.DONE;
      context.refusalLog.warn(remoteKey, "{}: {}", context.addressKey(), why);
      done.tryFailure(new CollectiveAuthenticationException(why));
      ctx.close();
    }
  }

  /**
   * Listening side: exactly HELLO (naming this endpoint as the one dialled; CHALLENGE sent); then exactly
   * RESPONSE (checked; ACCEPT or REFUSE). The whole exchange must end within the connect timeout; at most
   * {@code MAX_UNAUTHENTICATED_CONNECTIONS} exchanges run at once.
   */
  static final class Server extends ChannelInboundHandlerAdapter {
    private enum State { AWAIT_HELLO, AWAIT_RESPONSE, DONE }

    private final PipelineContext context;
    private State state = State.AWAIT_HELLO;
    private byte[] transcript;
    private String remoteKey;
    private boolean counted;
    private ScheduledFuture<?> deadline;

    Server(PipelineContext context) {
      this.context = context;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      counted = true;
      if (context.unauthenticated.incrementAndGet() > context.maxUnauthenticated) {
        state = State.DONE;
        context.refusals.incrementAndGet();
        context.refusalLog.warn(address(ctx), "{}: refused a connection from {}: {} connections are already "
            + "authenticating", context.addressKey(), address(ctx), context.maxUnauthenticated);
        ctx.close();
        return;
      }
      long ms = context.config.connectTimeoutMs();
      deadline = ctx.executor().schedule(() -> {
        if (state != State.DONE) {
          reject(ctx, "no handshake within " + ms + " ms");
        }
      }, ms, TimeUnit.MILLISECONDS);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
      finish();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (state != State.DONE) {
        // Closed by the other side before it authenticated (a dialler that found this endpoint's proof wrong,
        // or gave up): a failed handshake too.
        state = State.DONE;
        context.refusals.incrementAndGet();
      }
      finish();
      ctx.fireChannelInactive();
    }

    /** This connection no longer counts as authenticating. */
    private void finish() {
      if (counted) {
        counted = false;
        context.unauthenticated.decrementAndGet();
      }
      if (deadline != null) {
        deadline.cancel(false);
        deadline = null;
      }
    }

    /** The remote host (without its port: refusals are counted per host, not per connection). */
    private static String address(ChannelHandlerContext ctx) {
      java.net.SocketAddress a = ctx.channel().remoteAddress();
      return a instanceof java.net.InetSocketAddress ? ((java.net.InetSocketAddress) a).getHostString()
          : String.valueOf(a);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ByteBuf in = (ByteBuf) msg;
      try {
        byte type = in.isReadable() ? in.readByte() : EMPTY;
        if (state == State.AWAIT_HELLO && type == WireFormat.HELLO) {
          hello(ctx, in);
        } else if (state == State.AWAIT_RESPONSE && type == WireFormat.RESPONSE
            && in.readableBytes() == SecretHandshake.MAC_BYTES) {
          response(ctx, read(in, SecretHandshake.MAC_BYTES));
        } else if (state != State.DONE) {
          reject(ctx, "unexpected message type " + type + " during the handshake (expected "
              + (state == State.AWAIT_HELLO ? "HELLO" : "RESPONSE") + ")");
        }
      } finally {
        in.release();
      }
    }

    private void hello(ChannelHandlerContext ctx, ByteBuf in) {
      if (in.readableBytes() < Integer.BYTES + 1 + SecretHandshake.NONCE_BYTES) {
        reject(ctx, "malformed hello");
        return;
      }
      int version = in.readIntLE();
      if (version != SecretHandshake.VERSION) {
        reject(ctx, "protocol version " + version + " is not supported; this endpoint speaks version "
            + SecretHandshake.VERSION);
        return;
      }
      int code = in.readUnsignedByte();
      DataProtection protection = DataProtection.ofWireCode(code);
      if (protection != context.protection()) {
        reject(ctx, "the dialler's data protection is " + (protection == null ? "unknown (" + code + ")"
            : protection.toString()) + ", this endpoint's " + context.protection() + " (set "
            + "transport.dataProtection the same on every executor)");
        return;
      }
      byte[] clientNonce = read(in, SecretHandshake.NONCE_BYTES);
      String from = readName(in);
      String to = from == null ? null : readName(in);
      if (to == null || in.isReadable()) {
        reject(ctx, "malformed hello (endpoint names must be host:port of at most "
            + SecretHandshake.MAX_NAME_BYTES + " bytes)");
        return;
      }
      remoteKey = from;
      if (!to.equals(context.addressKey())) {
        reject(ctx, "it dialled " + to + ", but this endpoint is " + context.addressKey());
        return;
      }
      byte[] serverNonce = SecretHandshake.nonce();
      transcript = SecretHandshake.transcript(version, protection, clientNonce, serverNonce, from, to);
      state = State.AWAIT_RESPONSE;
      ByteBuf out = ctx.alloc().buffer();
      WireFormat.begin(out, WireFormat.CHALLENGE);
      out.writeIntLE(SecretHandshake.VERSION);
      out.writeBytes(serverNonce);
      out.writeBytes(context.handshake.serverProof(transcript));
      WireFormat.finish(out, 0);
      ctx.writeAndFlush(out);
    }

    private void response(ChannelHandlerContext ctx, byte[] proof) {
      if (!SecretHandshake.matches(context.handshake.clientProof(transcript), proof)) {
        reject(ctx, "authentication failed: wrong shared secret");
        return;
      }
      state = State.DONE;
      finish();
      LinkKeys keys = LinkKeys.of(context.handshake, transcript, false, context.protection());
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
            context.detach(ch, key, false, keys, null);
          } else {
            ch.close();
          }
        });
        ctx.pipeline().remove(this);
      } else {
        // ACCEPT leaves before the message handler (and its tagging of what follows) is in place.
        send(ctx, WireFormat.ACCEPT);
        allowFullMessages(ctx);
        ctx.pipeline().replace(this, "messages", new MessageHandler(context, remoteKey, false, keys));
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      if (state != State.DONE) {
        state = State.DONE;
        context.refusals.incrementAndGet();
        context.refusalLog.warn(address(ctx), "{}: handshake with {} failed: {}", context.addressKey(),
            address(ctx), PeerText.escape(cause.toString()));
      }
      ctx.close();
    }

    private void reject(ChannelHandlerContext ctx, String why) {
      state = State.DONE;
      context.refusals.incrementAndGet();
      context.refusalLog.warn(address(ctx), "{}: refused connection from {} ({}): {}", context.addressKey(),
          address(ctx), remoteKey == null ? "no name yet" : PeerText.escape(remoteKey), why);
      ByteBuf out = ctx.alloc().buffer();
      WireFormat.begin(out, WireFormat.REFUSE);
      WireFormat.writeString(out, why);
      WireFormat.finish(out, 0);
      ctx.writeAndFlush(out).addListener(f -> ctx.close());
    }
  }
}
