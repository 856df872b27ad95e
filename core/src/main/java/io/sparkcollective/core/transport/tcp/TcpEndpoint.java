package io.sparkcollective.core.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.FramePool;
import io.sparkcollective.core.transport.tcp.direct.CallerDrivenIo;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.pipeline.NettyPipelines;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
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
 * <p>Parts: the {@link GroupRegistry} (which rank each message is for), the {@link Connections} (one per
 * remote endpoint and channel, made on first use), Netty's {@link NettyPipelines} (listening, dialling,
 * handshakes, TLS) and, by default ({@code transport.progress=caller}), the {@link CallerDrivenIo} that
 * takes plain connections over once authenticated: their sockets are then driven by the threads waiting for
 * frames and the endpoint's progress thread, and a sender writes to its socket itself. With
 * {@code progress=eventLoop}, and for TLS connections, Netty's event loops do all socket work.
 */
public final class TcpEndpoint implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TcpEndpoint.class);
  /** Pause before dialling again a peer whose endpoint is not up yet, while joining. */
  private static final long JOIN_RETRY_MS = Tuning.JOIN_RETRY_MS;

  private final CollectiveConfig config;
  private final NanoClock clock;
  private final FramePool pool;
  private final GroupRegistry registry;
  private final NettyPipelines pipelines;
  private final Connections connections;
  /** Drives plain connections from the waiting threads; null when Netty's event loops do all socket work. */
  private final CallerDrivenIo io;
  /** Which peer addresses are this host's, as {@link #sharedMemoryTo} found them. */
  private final ConcurrentHashMap<InetAddress, Boolean> onThisHost = new ConcurrentHashMap<>();
  private final String addressKey;
  private final InetSocketAddress address;
  private volatile boolean closed;

  private TcpEndpoint(CollectiveConfig config, String secret, String bindHost, int port, NanoClock clock) {
    SecretHandshake handshake = new SecretHandshake(secret);
    this.config = config;
    this.clock = clock;
    this.registry = new GroupRegistry(this::addressKey, clock);
    this.pool = new FramePool(config.segmentBytes(), DataHeader.BYTES, MessageSealer.TAG_BYTES);
    boolean callerDriven = config.callerProgress();
    this.pipelines = new NettyPipelines(config, callerDriven);
    this.connections = new Connections(this::addressKey, config.connectTimeoutMs(), pipelines.executors(),
        pipelines::dial, registry, config.channels() == 1);
    try {
      this.io = callerDriven ? new CallerDrivenIo(config, clock, pool, this::addressKey, registry, connections)
          : null;
    } catch (IOException e) {
      pipelines.shutdown();
      throw new CollectiveException("cannot open a socket selector: " + e, e);
    }
    int bound;
    try {
      bound = pipelines.listen(bindHost, port, handshake, this::addressKey, registry, connections, io);
    } catch (RuntimeException e) {
      pipelines.shutdown();
      if (io != null) {
        io.close();
      }
      throw e;
    }
    this.address = new InetSocketAddress(bindHost, bound);
    this.addressKey = bindHost + ":" + bound;
    LOG.info("collective endpoint listening on {} ({})", addressKey, pipelines.mode());
  }

  /** Starts an endpoint on {@code bindHost:port} (0 = ephemeral) that authenticates peers with {@code secret}. */
  public static TcpEndpoint start(String bindHost, int port, String secret, CollectiveConfig config) {
    return new TcpEndpoint(config, secret, bindHost, port, NanoClock.SYSTEM);
  }

  /**
   * As above, with deadlines, heartbeats and silences measured on {@code clock} (tests drive failure detection
   * with a manual one; Netty's own timers, used with {@code progress=eventLoop} and TLS, keep real time).
   */
  static TcpEndpoint start(String bindHost, int port, String secret, CollectiveConfig config, NanoClock clock) {
    return new TcpEndpoint(config, secret, bindHost, port, clock);
  }

  /**
   * Starts an endpoint on the configured port or port range ({@code port} setting; the first free port of a
   * range is taken) and bind address ({@code bindInterface}, else {@code bindAddress}, else {@code defaultHost}).
   *
   * @throws CollectiveUsageException naming the setting when no port of the range is free
   */
  public static TcpEndpoint start(String defaultHost, String secret, CollectiveConfig config) {
    String host = BindAddresses.host(config, defaultHost);
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

  FramePool pool() {
    return pool;
  }

  /**
   * Whether payloads to the endpoint at {@code peer} go through a shared-memory ring once connected: this
   * endpoint's connections offer rings (caller-driven progress, which excludes TLS, and rings configured) and
   * the peer is on this host.
   */
  boolean sharedMemoryTo(InetSocketAddress peer) {
    InetAddress a = peer.getAddress();
    // The interface look-up takes tens of microseconds; every group of the endpoint asks it of the same peers.
    return io != null && io.offersRings() && a != null && onThisHost.computeIfAbsent(a, CallerDrivenIo::onThisHost);
  }

  /**
   * The caller-driven I/O of this endpoint (public for its counters: what tests and benchmarks report), or null when
   * the event loops move every byte.
   */
  public CallerDrivenIo callerIo() {
    return io;
  }

  NanoClock clock() {
    return clock;
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

  /** Wake-ups that same-host senders rang through the socket because a thread here was blocked in its poll. */
  public long sharedMemoryWakeups() {
    return io == null ? 0 : io.ringWakeups();
  }

  /**
   * DATA messages sent to same-host peers whose payload the engine wrote straight into the peer's shared-memory
   * ring (no copy through a pooled frame).
   */
  public long sharedMemoryClaims() {
    return io == null ? 0 : io.claimedPayloads();
  }

  /** Connections refused during the handshake (wrong secret or version). */
  public long refusedConnections() {
    return pipelines.refusedConnections();
  }

  /** Frames handed out by this endpoint's pool and not yet returned (0 when idle). */
  public long outstandingFrames() {
    return pool.outstanding();
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
   * interrupted. A join that fails is aborted: the ranks that joined fail with its reason.
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
      t.chooseRoutes();
      return t;
    } catch (RuntimeException e) {
      if (e instanceof CollectiveException) {
        // The ranks that joined already hear why this one gives up (its task failed, was killed, timed out)
        // rather than only that it left.
        t.abort((CollectiveException) e);
      }
      t.close();
      throw e;
    }
  }

  GroupRegistry registry() {
    return registry;
  }

  /**
   * Messages from authenticated peers dropped because they spoke for a rank their endpoint does not host
   * (a source rank of another endpoint, a group it is not in); the groups were not affected.
   */
  public long droppedMessages() {
    return registry.droppedMessages();
  }

  void unregister(TcpTransport t) {
    registry.unregister(t);
  }

  /** The transport of {@code rank} of {@code group} if that rank is registered on this endpoint, else null. */
  TcpTransport registered(long group, int rank) {
    return registry.registered(group, rank);
  }

  private void sendJoin(TcpTransport t, int peer, long deadline, Cancellation cancellation) {
    while (true) {
      t.checkCancelled(cancellation);
      try {
        ByteBuf out = ControlMessages.join(PooledByteBufAllocator.DEFAULT, t.groupId(), t.rank(), peer, t.size());
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

  /** See {@link Connections#connected}. */
  Link connected(String connectionKey) {
    return connections.connected(connectionKey);
  }

  /** See {@link Connections#twoWayLink}. */
  Link twoWayLink(String connectionKey, String key) {
    return connections.twoWayLink(connectionKey, key);
  }

  /** See {@link Connections#writeWithoutWaiting}. */
  void writeWithoutWaiting(String connectionKey, String key, InetSocketAddress remote, ByteBuf msg) {
    connections.writeWithoutWaiting(connectionKey, key, remote, msg);
  }

  /** The name of connection number {@code channel} (from 0) to endpoint {@code key}. */
  static String channelKey(String key, int channel) {
    return Connections.channelKey(key, channel);
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
    pipelines.closeServer();
    connections.closeLinks();
    if (io != null) {
      io.close();
    }
    connections.failPending();
    pipelines.shutdown();
    LOG.info("collective endpoint {} closed", addressKey);
  }
}
