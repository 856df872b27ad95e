package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFactory;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.Promise;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.transport.tcp.link.Inbound;
import io.sparkcollective.core.transport.tcp.link.IoThread;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkListener;
import io.sparkcollective.core.transport.tcp.link.SocketAdopter;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * An endpoint's Netty side: the event loops, the listening socket, dialling, and each connection's pipeline
 * (TLS when enabled, the frame decoder, the reader-idle timer, then the handshake). A connection that passes
 * the handshake either stays in its pipeline ({@link MessageHandler}, with heartbeats on its event loop) or,
 * with caller-driven I/O, is taken out of Netty and handed to the {@link SocketAdopter}.
 *
 * <p>Nothing outside this package sees a Netty channel: connections leave it as {@link Link}s.
 */
public final class NettyPipelines {
  private final CollectiveConfig config;
  private final TlsContexts tls;
  private final EventLoopGroup loops;
  private final ChannelFactory<? extends SocketChannel> socketFactory;
  private final ChannelFactory<? extends ServerChannel> serverFactory;
  private final String mode;
  private PipelineContext context;
  private Channel server;

  /**
   * Event loops for an endpoint with {@code config}; with {@code callerDriven} one NIO loop whose sockets can
   * be handed over, else epoll (where available) or NIO loops that move every byte.
   */
  // The event loop groups below are deprecated in Netty 4.2 in favour of classes 4.1 lacks; both lines
  // (Spark 3.5 ships 4.1, Spark 4 ships 4.2) still have these.
  @SuppressWarnings("deprecation")
  public NettyPipelines(CollectiveConfig config, boolean callerDriven) {
    this.config = config;
    this.tls = config.tlsEnabled() ? TlsContexts.from(config) : null;
    // Caller-driven connections are NIO sockets Netty connects and authenticates, then hands over.
    boolean epoll = !callerDriven && Epoll.isAvailable();
    this.loops = epoll ? new EpollEventLoopGroup(config.ioThreads(), IoThread.factory())
        : new NioEventLoopGroup(callerDriven ? 1 : config.ioThreads(), IoThread.factory());
    this.socketFactory = epoll ? EpollSocketChannel::new
        : callerDriven ? DetachableChannels.Socket::new : NioSocketChannel::new;
    this.serverFactory = epoll ? EpollServerSocketChannel::new
        : callerDriven ? DetachableChannels.Server::new : NioServerSocketChannel::new;
    this.mode = (callerDriven ? "caller-driven" : epoll ? "epoll" : "nio") + (tls != null ? ", TLS" : "");
  }

  /** Where promises of connections are made and their listeners run. */
  public EventExecutorGroup executors() {
    return loops;
  }

  /** How bytes move, for the endpoint's log line: "caller-driven", "epoll" or "nio", and whether TLS. */
  public String mode() {
    return mode;
  }

  /**
   * Listens on {@code bindHost:port} (0: ephemeral) and returns the port bound. Connections that pass the
   * handshake with {@code handshake} are announced to {@code links}; their messages go to {@code inbound};
   * with an {@code adopter} their sockets go to it.
   *
   * @throws CollectiveUsageException if the address cannot be bound
   */
  @SuppressWarnings("deprecation") // RCVBUF_ALLOCATOR: deprecated in Netty 4.2, the only form 4.1 has
  public int listen(String bindHost, int port, SecretHandshake handshake, Supplier<String> addressKey,
      Inbound inbound, LinkListener links, SocketAdopter adopter) {
    context = new PipelineContext(config, handshake, addressKey, inbound, links, adopter);
    ServerBootstrap sb = new ServerBootstrap().group(loops).channelFactory(serverFactory)
        .option(ChannelOption.SO_REUSEADDR, true)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childOption(ChannelOption.ALLOCATOR, PooledByteBufAllocator.DEFAULT)
        .childOption(ChannelOption.RCVBUF_ALLOCATOR, receiveSizes())
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            if (tls != null) {
              ch.pipeline().addLast("tls", tls.server.newHandler(ch.alloc()));
            }
            configure(ch);
            ch.pipeline().addLast("handshake", new HandshakeHandlers.Server(context));
          }
        });
    if (config.socketBufferBytes() > 0) {
      sb.childOption(ChannelOption.SO_SNDBUF, config.socketBufferBytes())
          .childOption(ChannelOption.SO_RCVBUF, config.socketBufferBytes());
    }
    try {
      server = sb.bind(bindHost, port).syncUninterruptibly().channel();
    } catch (Exception e) { // Netty rethrows the bind's IOException unchecked
      throw new CollectiveUsageException("cannot listen on " + bindHost + ":" + port + ": " + e);
    }
    return ((InetSocketAddress) server.localAddress()).getPort();
  }

  /** Connections refused during the handshake (wrong secret or version). */
  public long refusedConnections() {
    return context == null ? 0 : context.refusals.get();
  }

  /**
   * Read buffer sizes that grow to a whole segment: Netty's default stops at 64 KiB per read, so a 256 KiB
   * segment took four reads, four decoder passes and a merge of the pieces.
   */
  @SuppressWarnings("deprecation") // AdaptiveRecvByteBufAllocator: deprecated in Netty 4.2, the only form 4.1 has
  private io.netty.channel.AdaptiveRecvByteBufAllocator receiveSizes() {
    int max = Math.max(65536, Math.min(4 << 20, config.segmentBytes() + DataHeader.BYTES));
    return new io.netty.channel.AdaptiveRecvByteBufAllocator(64, 2048, Integer.highestOneBit(max - 1) << 1);
  }

  /**
   * Makes an authenticated connection to the endpoint {@code key} at {@code remote} and completes
   * {@code result} with it (or fails it, at the latest after the connect timeout).
   */
  @SuppressWarnings("deprecation") // RCVBUF_ALLOCATOR: deprecated in Netty 4.2, the only form 4.1 has
  public void dial(String key, InetSocketAddress remote, Promise<Link> result) {
    Promise<Link> authenticated = loops.next().newPromise();
    Bootstrap b = new Bootstrap().group(loops).channelFactory(socketFactory)
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.ALLOCATOR, PooledByteBufAllocator.DEFAULT)
        .option(ChannelOption.RCVBUF_ALLOCATOR, receiveSizes())
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, config.connectTimeoutMs()))
        .handler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            if (tls != null) {
              ch.pipeline().addLast("tls", tls.dialling(
                  tls.client.newHandler(ch.alloc(), remote.getHostString(), remote.getPort())));
            }
            configure(ch);
            ch.pipeline().addLast("handshake", new HandshakeHandlers.Client(context, key, authenticated));
          }
        });
    if (config.socketBufferBytes() > 0) {
      b.option(ChannelOption.SO_SNDBUF, config.socketBufferBytes())
          .option(ChannelOption.SO_RCVBUF, config.socketBufferBytes());
    }
    ChannelFuture cf = b.connect(remote);
    cf.addListener(f -> {
      if (!f.isSuccess()) {
        result.tryFailure(f.cause());
      }
    });
    authenticated.addListener(f -> {
      if (f.isSuccess()) {
        if (!result.trySuccess(authenticated.getNow())) {
          authenticated.getNow().close(); // timed out meanwhile
        }
      } else {
        result.tryFailure(f.cause());
        cf.channel().close();
      }
    });
    loops.schedule(() -> {
      if (result.tryFailure(new CollectiveTimeoutException(-1, "handshake with " + key + " timed out"))) {
        cf.channel().close();
      }
    }, config.connectTimeoutMs(), TimeUnit.MILLISECONDS);
  }

  private void configure(SocketChannel ch) {
    // Until the handshake ends, only messages of a handshake's size: an unauthenticated peer cannot make this
    // endpoint buffer more (the handshake handlers put the full-size decoder in after ACCEPT).
    ch.pipeline().addLast("frames", frameDecoder(Tuning.HANDSHAKE_MAX_BYTES));
    // Reader side only: a writer-idle timer would hook a listener (an allocation) onto every write.
    ch.pipeline().addLast("idle", new IdleStateHandler(config.heartbeatTimeoutMs(), 0, 0, TimeUnit.MILLISECONDS));
  }

  /** Splits the byte stream into messages (length field stripped) and rejects any above the wire's limit. */
  static LengthFieldBasedFrameDecoder frameDecoder() {
    return frameDecoder(WireFormat.MAX_MESSAGE_BYTES);
  }

  /**
   * As {@link #frameDecoder()}, rejecting messages above {@code maxMessageBytes} (length field included) as soon
   * as their length field is read.
   */
  static LengthFieldBasedFrameDecoder frameDecoder(int maxMessageBytes) {
    return new LengthFieldBasedFrameDecoder(ByteOrder.LITTLE_ENDIAN, maxMessageBytes, 0,
        WireFormat.LENGTH_FIELD_BYTES, 0, WireFormat.LENGTH_FIELD_BYTES, true) {
      @Override
      protected long getUnadjustedFrameLength(ByteBuf buf, int offset, int length, ByteOrder order) {
        // The base class reads through buf.order(LITTLE_ENDIAN), a new wrapper per message.
        return buf.getUnsignedIntLE(offset);
      }
    };
  }

  /** Stops accepting connections. */
  public void closeServer() {
    if (server != null) {
      server.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }

  /** Stops the event loops (after every connection is closed). */
  public void shutdown() {
    loops.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
  }
}
