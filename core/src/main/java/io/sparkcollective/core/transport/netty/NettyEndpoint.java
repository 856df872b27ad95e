package io.sparkcollective.core.transport.netty;

import io.sparkcollective.core.config.Tuning;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
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
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.Promise;
import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.FramePool;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One TCP endpoint per process (per executor in Spark): listens on one port, keeps one authenticated
 * connection to each remote endpoint it sends to, and carries the frames of every group that has ranks
 * here. Connections outlive groups, so a new group only pays its join (one small message per peer).
 *
 * <p>Groups: {@link #join} registers a {@link TcpTransport} for (group, rank) and exchanges JOIN messages
 * with every peer; a group is formed once every peer has joined, so no data frame ever arrives for a
 * group that is not registered here yet. Frames for a group that is not registered (an earlier stage
 * attempt, another application, a forged id) are dropped and counted, never delivered.
 *
 * <p>Threads: by default ({@code transport.progress=caller}) Netty's event loop ({@code collective-io-N})
 * only connects and authenticates; the plain sockets are then driven by the threads waiting for frames and
 * the endpoint's progress thread ({@link CallerDrivenIo}), and a sender writes to its socket itself. With
 * {@code progress=eventLoop}, and for TLS connections, Netty's event loops do all socket work. Threads that
 * move bytes are {@link IoThread}s and never block.
 */
public final class NettyEndpoint implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NettyEndpoint.class);
  /** Pause before dialling again a peer whose endpoint is not up yet, while joining. */
  private static final long JOIN_RETRY_MS = Tuning.JOIN_RETRY_MS;

  private final CollectiveConfig config;
  private final SecretHandshake handshake;
  private final EventLoopGroup loops;
  private final io.netty.channel.ChannelFactory<? extends SocketChannel> socketFactory;
  private final Channel server;
  private final String addressKey;
  private final InetSocketAddress address;
  private final FramePool pool;
  private final NanoClock clock;
  private final TlsContexts tls;
  private final Connections connections;
  /** Drives plain connections from the waiting threads; null when Netty's event loops do all socket work. */
  private final CallerDrivenIo io;
  private final GroupRegistry registry;
  private final AtomicLong refusals = new AtomicLong();
  private volatile boolean closed;

  // The event loop groups below are deprecated in Netty 4.2 in favour of classes 4.1 lacks; both lines
  // (Spark 3.5 ships 4.1, Spark 4 ships 4.2) still have these.
  @SuppressWarnings("deprecation")
  private NettyEndpoint(CollectiveConfig config, String secret, String bindHost, int port, NanoClock clock) {
    this.config = config;
    this.handshake = new SecretHandshake(secret);
    this.clock = clock;
    this.registry = new GroupRegistry(this::addressKey, clock);
    this.pool = new FramePool(config.segmentBytes(), DataHeader.BYTES);
    this.tls = config.tlsEnabled() ? TlsContexts.from(config) : null;
    boolean callerDriven = config.callerProgress();
    // Caller-driven connections are NIO sockets Netty connects and authenticates, then hands over.
    boolean epoll = !callerDriven && Epoll.isAvailable();
    java.util.concurrent.ThreadFactory threads = IoThread.factory();
    this.loops = epoll ? new EpollEventLoopGroup(config.ioThreads(), threads)
        : new NioEventLoopGroup(callerDriven ? 1 : config.ioThreads(), threads);
    this.socketFactory = epoll ? EpollSocketChannel::new
        : callerDriven ? DetachableChannels.Socket::new : NioSocketChannel::new;
    io.netty.channel.ChannelFactory<? extends ServerChannel> serverFactory = epoll ? EpollServerSocketChannel::new
        : callerDriven ? DetachableChannels.Server::new : NioServerSocketChannel::new;
    try {
      this.io = callerDriven ? new CallerDrivenIo(this) : null;
    } catch (java.io.IOException e) {
      loops.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw new CollectiveException("cannot open a socket selector: " + e, e);
    }
    this.connections = new Connections(this::addressKey, config.connectTimeoutMs(), loops, this::dial, registry);
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
            ch.pipeline().addLast("handshake", new HandshakeHandlers.Server(NettyEndpoint.this));
          }
        });
    if (config.socketBufferBytes() > 0) {
      sb.childOption(ChannelOption.SO_SNDBUF, config.socketBufferBytes())
          .childOption(ChannelOption.SO_RCVBUF, config.socketBufferBytes());
    }
    try {
      this.server = sb.bind(bindHost, port).syncUninterruptibly().channel();
    } catch (Exception e) { // Netty rethrows the bind's IOException unchecked
      loops.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      if (io != null) {
        io.close();
      }
      throw new CollectiveUsageException("cannot listen on " + bindHost + ":" + port + ": " + e);
    }
    InetSocketAddress bound = (InetSocketAddress) server.localAddress();
    this.address = new InetSocketAddress(bindHost, bound.getPort());
    this.addressKey = bindHost + ":" + bound.getPort();

    LOG.info("collective endpoint listening on {} ({}{})", addressKey,
        callerDriven ? "caller-driven" : epoll ? "epoll" : "nio",
        tls != null ? ", TLS" : "");
  }

  /** Starts an endpoint on {@code bindHost:port} (0 = ephemeral) that authenticates peers with {@code secret}. */
  public static NettyEndpoint start(String bindHost, int port, String secret, CollectiveConfig config) {
    return new NettyEndpoint(config, secret, bindHost, port, NanoClock.SYSTEM);
  }

  /**
   * As above, with deadlines, heartbeats and silences measured on {@code clock} (tests drive failure detection
   * with a manual one; Netty's own timers, used with {@code progress=eventLoop} and TLS, keep real time).
   */
  static NettyEndpoint start(String bindHost, int port, String secret, CollectiveConfig config, NanoClock clock) {
    return new NettyEndpoint(config, secret, bindHost, port, clock);
  }

  /**
   * Starts an endpoint on the configured port or port range ({@code port} setting; the first free port of a
   * range is taken) and bind address ({@code bindAddress}, else {@code defaultHost}).
   *
   * @throws CollectiveUsageException naming the setting when no port of the range is free
   */
  public static NettyEndpoint start(String defaultHost, String secret, CollectiveConfig config) {
    String host = !config.bindInterface().isEmpty() ? interfaceAddress(config.bindInterface())
        : config.bindAddress().isEmpty() ? defaultHost : config.bindAddress();
    CollectiveUsageException last = null;
    for (int port = config.portFrom(); port <= config.portTo(); port++) {
      try {
        return start(host, port, secret, config);
      } catch (CollectiveUsageException e) {
        last = e;
      }
    }
    throw new CollectiveUsageException("no port of " + CollectiveConfig.SPARK_PREFIX + CollectiveConfig.PORT + "="
        + config.portFrom() + (config.portTo() != config.portFrom() ? "-" + config.portTo() : "") + " is free on "
        + host + " (last error: " + (last == null ? "none" : last.getMessage()) + ")");
  }

  /**
   * The address of network interface {@code name} (IPv4 preferred, then any non-link-local one).
   *
   * @throws CollectiveUsageException naming the setting and the interfaces there are, if it has none
   */
  static String interfaceAddress(String name) {
    String key = CollectiveConfig.SPARK_PREFIX + CollectiveConfig.BIND_INTERFACE;
    try {
      java.net.NetworkInterface nic = java.net.NetworkInterface.getByName(name);
      if (nic != null && nic.isUp()) {
        String fallback = null;
        for (java.net.InetAddress a : java.util.Collections.list(nic.getInetAddresses())) {
          if (a instanceof java.net.Inet4Address) {
            return a.getHostAddress();
          }
          if (fallback == null && !a.isLinkLocalAddress()) {
            fallback = a.getHostAddress();
          }
        }
        if (fallback != null) {
          return fallback;
        }
      }
      StringBuilder known = new StringBuilder();
      for (java.net.NetworkInterface n : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
        if (n.isUp()) {
          known.append(known.length() == 0 ? "" : ", ").append(n.getName());
        }
      }
      throw new CollectiveUsageException(key + "=" + name + ": " + (nic == null ? "no such network interface"
          : nic.isUp() ? "the interface has no usable address" : "the interface is down") + " on this host "
          + "(interfaces up: " + known + ")");
    } catch (java.net.SocketException e) {
      throw new CollectiveUsageException(key + "=" + name + ": cannot list the network interfaces: " + e);
    }
  }

  /** The address peers dial, {@code host:port}. */
  public InetSocketAddress address() {
    return address;
  }

  public String addressKey() {
    return addressKey;
  }

  CollectiveConfig config() {
    return config;
  }

  SecretHandshake handshake() {
    return handshake;
  }

  FramePool pool() {
    return pool;
  }

  /** The caller-driven I/O of this endpoint, or null when the event loops move every byte. */
  CallerDrivenIo callerIo() {
    return io;
  }

  NanoClock clock() {
    return clock;
  }

  /**
   * Read buffer sizes that grow to a whole segment: Netty's default stops at 64 KiB per read, so a 256 KiB
   * segment took four reads, four decoder passes and a merge of the pieces.
   */
  @SuppressWarnings("deprecation") // see dial
  private io.netty.channel.AdaptiveRecvByteBufAllocator receiveSizes() {
    int max = Math.max(65536, Math.min(4 << 20, config.segmentBytes() + DataHeader.BYTES));
    return new io.netty.channel.AdaptiveRecvByteBufAllocator(64, 2048, Integer.highestOneBit(max - 1) << 1);
  }

  /** Authenticated connections to other endpoints open now (inbound and outbound). */
  public int openConnections() {
    return connections.open();
  }

  /** Frames dropped because no rank of their group is registered here (stale or foreign groups). */
  public long rejectedFrames() {
    return registry.rejectedFrames();
  }

  /** Payloads received through the shared-memory rings of same-host connections. */
  public long sharedMemoryPayloads() {
    return io == null ? 0 : io.sharedPayloads();
  }

  /** Connections refused during the handshake (wrong secret or version). */
  public long refusedConnections() {
    return refusals.get();
  }

  /** Frames handed out by this endpoint's pool and not yet returned (0 when idle). */
  public long outstandingFrames() {
    return pool.outstanding();
  }

  void countRefusal() {
    refusals.incrementAndGet();
  }

  /** 64-bit id of a group name (which must include the stage attempt, so attempts never collide). */
  public static long groupId(String groupName) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(groupName.getBytes(StandardCharsets.UTF_8));
      long id = 0;
      for (int i = 0; i < 8; i++) {
        id = (id << 8) | (d[i] & 0xFF);
      }
      return id;
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  // ------------------------------------------------------------------------------------------ groups

  /**
   * Joins {@code groupName} as {@code rank}; {@code peers.get(r)} is rank r's endpoint address (this
   * endpoint's for the local rank). Returns once every peer has joined.
   *
   * @throws CollectiveTimeoutException naming the ranks that did not join within the join timeout
   */
  public TcpTransport join(String groupName, int rank, List<InetSocketAddress> peers) {
    return join(groupName, rank, peers, Cancellation.NONE);
  }

  /**
   * As {@link #join(String, int, List)}, leaving the wait when {@code cancellation} fires or the thread is
   * interrupted.
   *
   * @throws CollectiveCancelledException if it did
   */
  public TcpTransport join(String groupName, int rank, List<InetSocketAddress> peers, Cancellation cancellation) {
    if (closed) {
      throw new CollectiveUsageException("endpoint " + addressKey + " is closed");
    }
    int size = peers.size();
    if (rank < 0 || rank >= size) {
      throw new CollectiveUsageException("rank " + rank + " is not in a group of " + size);
    }
    long gid = groupId(groupName);
    String[] keys = new String[size];
    for (int r = 0; r < size; r++) {
      InetSocketAddress a = peers.get(r);
      keys[r] = a.getHostString() + ":" + a.getPort();
    }
    TcpTransport t = new TcpTransport(this, gid, groupName, rank, peers, keys);
    registry.register(t);
    long deadline = clock.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.joinTimeoutMs());
    try {
      for (int p = 0; p < size; p++) {
        if (p != rank) {
          sendJoin(t, p, deadline, cancellation);
        }
      }
      t.awaitJoined(deadline, cancellation);
      return t;
    } catch (RuntimeException e) {
      t.close();
      throw e;
    }
  }

  void unregister(TcpTransport t) {
    registry.unregister(t);
  }

  /** The transport of {@code rank} of {@code group} if that rank is registered on this endpoint, else null. */
  TcpTransport registered(long group, int rank) {
    return registry.registered(group, rank);
  }

  /** The groups with ranks here. */
  GroupRegistry registry() {
    return registry;
  }

  private void sendJoin(TcpTransport t, int peer, long deadline, Cancellation cancellation) {
    while (true) {
      t.checkCancelled(cancellation);
      try {
        ByteBuf out = PooledByteBufAllocator.DEFAULT.buffer(32);
        WireFormat.begin(out, WireFormat.JOIN);
        out.writeLongLE(t.groupId()).writeIntLE(t.rank()).writeIntLE(peer).writeIntLE(t.size());
        WireFormat.finish(out, 0);
        write(t.connectionKey(peer), t.peerKey(peer), t.peerAddress(peer), out);
        return;
      } catch (CollectiveAuthenticationException e) {
        throw e;
      } catch (CollectiveException e) {
        // The peer's endpoint may not be up yet (ranks start at different times): retry until the deadline.
        if (clock.nanoTime() > deadline) {
          throw new CollectiveTimeoutException(peer, "rank " + t.rank() + " of group " + t.groupName()
              + " could not reach rank " + peer + " at " + t.peerKey(peer) + " within the join timeout of "
              + config.joinTimeoutMs() + " ms: " + e.getMessage());
        }
        try {
          Thread.sleep(JOIN_RETRY_MS);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new CollectiveCancelledException("rank " + t.rank() + " of group " + t.groupName()
              + " was interrupted while joining");
        }
      }
    }
  }

  // ------------------------------------------------------------------------------------- connections

  /**
   * Writes {@code msg} (ownership passes here) to the endpoint {@code key}: see
   * {@link Connections#write(String, String, InetSocketAddress, ByteBuf)}.
   */
  void write(String key, InetSocketAddress remote, ByteBuf msg) {
    connections.write(key, key, remote, msg);
  }

  /** See {@link Connections#write(String, String, InetSocketAddress, ByteBuf)}. */
  void write(String connectionKey, String key, InetSocketAddress remote, ByteBuf msg) {
    connections.write(connectionKey, key, remote, msg);
  }

  /** See {@link Connections#writeWithoutWaiting}. */
  void writeWithoutWaiting(String connectionKey, String key, InetSocketAddress remote, ByteBuf msg) {
    connections.writeWithoutWaiting(connectionKey, key, remote, msg);
  }

  /** The name of connection number {@code channel} (from 0) to endpoint {@code key}. */
  static String channelKey(String key, int channel) {
    return Connections.channelKey(key, channel);
  }

  @SuppressWarnings("deprecation") // RCVBUF_ALLOCATOR: deprecated in Netty 4.2, the only form 4.1 has
  private void dial(String key, InetSocketAddress remote, Promise<Link> result) {
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
              ch.pipeline().addLast("tls", TlsContexts.withoutHostnameCheck(
                  tls.client.newHandler(ch.alloc(), remote.getHostString(), remote.getPort())));
            }
            configure(ch);
            ch.pipeline().addLast("handshake", new HandshakeHandlers.Client(NettyEndpoint.this, key, authenticated));
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
    ch.pipeline().addLast("frames", WireFormat.newDecoder());
    // Reader side only: a writer-idle timer would hook a listener (an allocation) onto every write.
    ch.pipeline().addLast("idle", new IdleStateHandler(config.heartbeatTimeoutMs(), 0, 0, TimeUnit.MILLISECONDS));
  }

  /** An authenticated connection whose bytes the event loop moves is ready for messages. */
  void channelReady(String remoteKey, Channel ch, Link link) {
    connections.opened(link, remoteKey);
    // Heartbeats keep the peer's reader-idle timer quiet while no data flows.
    long every = config.heartbeatIntervalMs();
    java.util.concurrent.ScheduledFuture<?> beat = ch.eventLoop().scheduleAtFixedRate(() -> {
      if (ch.isActive()) {
        ByteBuf out = ch.alloc().buffer(WireFormat.LENGTH_FIELD_BYTES + 1);
        WireFormat.begin(out, WireFormat.HEARTBEAT);
        WireFormat.finish(out, 0);
        ch.writeAndFlush(out, ch.voidPromise());
      }
    }, every, every, TimeUnit.MILLISECONDS);
    ch.closeFuture().addListener(f -> beat.cancel(false));
  }

  /**
   * Takes an authenticated connection away from Netty (no more reads by its event loop, handlers removed,
   * deregistered) and gives its socket to the caller-driven I/O; completes {@code done} with the new link.
   * The handshake guarantees nothing follows ACCEPT until the dialling side has sent something, so no bytes
   * are left behind in Netty's buffers.
   */
  void detach(Channel ch, String remoteKey, boolean isOutbound, Promise<Link> done) {
    ch.config().setAutoRead(false);
    ((DetachableChannels.Socket) ch).markDetached();
    for (String name : new String[] {"idle", "frames"}) {
      if (ch.pipeline().get(name) != null) {
        ch.pipeline().remove(name);
      }
    }
    ch.deregister().addListener(f -> {
      try {
        if (!f.isSuccess()) {
          throw new java.io.IOException("deregistering from the event loop failed: " + f.cause());
        }
        DirectLink link = io.adopt(((DetachableChannels.Socket) ch).socket(), remoteKey, isOutbound);
        connections.opened(link, remoteKey);
        if (done != null) {
          done.trySuccess(link);
        }
      } catch (java.io.IOException | RuntimeException e) {
        LOG.warn("{}: cannot take over the connection to {}: {}", addressKey, remoteKey, e.toString());
        ((DetachableChannels.Socket) ch).socket().close();
        if (done != null) {
          done.tryFailure(e);
        }
      }
    });
  }

  /** A connection to {@code remoteKey} closed: see {@link Connections#lost}. */
  void connectionLost(String remoteKey, Link link, boolean isOutbound, String why) {
    connections.lost(remoteKey, link, isOutbound, why);
  }

  /** Closes every connection to {@code remoteKey} (fault injection and health tests). */
  void disconnect(String remoteKey) {
    connections.disconnect(remoteKey);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    connections.closing();
    registry.closeAll();
    server.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
    connections.closeLinks();
    if (io != null) {
      io.close();
    }
    connections.failPending();
    loops.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
    LOG.info("collective endpoint {} closed", addressKey);
  }
}
