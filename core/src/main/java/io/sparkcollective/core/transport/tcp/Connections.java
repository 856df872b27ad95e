package io.sparkcollective.core.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.Promise;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.transport.tcp.link.IoThread;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkListener;
import io.sparkcollective.core.transport.tcp.link.MessageDispatcher;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An endpoint's authenticated connections: one connection per (remote endpoint, channel) to send over, made on
 * first use and reused by every group; the inbound ones that peers made; and the writes onto them. Who
 * moves a connection's bytes (Netty's pipeline or the caller-driven I/O) is the {@link Link}'s business.
 *
 * <p>With one channel, a pair of endpoints sends the DATA of its small operations both ways over the connection
 * the endpoint of the smaller name dialled, where it can ({@link #twoWayLink}); larger ones go over the sender's
 * own connection. An inbound connection, and an outbound one a peer may send over, carry the remote ranks'
 * frames, so losing one loses peers (see {@link #lost}).
 */
final class Connections implements LinkListener {
  private static final Logger LOG = LoggerFactory.getLogger(Connections.class);

  /**
   * Makes an authenticated connection to {@code key} at {@code remote} and completes {@code result} with it: the
   * seam where a network engine plugs in (today Netty's pipelines, whose links may then be caller-driven).
   */
  @FunctionalInterface
  interface Dialler {
    void dial(String key, InetSocketAddress remote, Promise<Link> result);
  }

  private final Supplier<String> addressKey;
  private final long connectTimeoutMs;
  private final EventExecutorGroup loops;
  private final Dialler dialler;
  private final GroupRegistry registry;
  /** Whether peers' connections are sent over both ways (one channel per pair of endpoints). */
  private final boolean twoWay;
  private final ConcurrentHashMap<String, Promise<Link>> outbound = new ConcurrentHashMap<>();
  /** Inbound connections that the peer may be answered over, by the peer's name: see {@link #heard}. */
  private final ConcurrentHashMap<String, Link> heardFrom = new ConcurrentHashMap<>();
  private final Map<Link, String> openLinks = new ConcurrentHashMap<>();
  private volatile boolean closing;
  /**
   * Orders {@link #writeWhenConnected} with {@link #failPending}: a message either waits on a promise that
   * {@code failPending} fails while the event loops still run (its listener releases it), or is released at
   * once.
   */
  private final Object pendingLock = new Object();
  private volatile boolean pendingFailed; // written under pendingLock

  /**
   * Connections of the endpoint at {@code addressKey} (known once it listens); messages to itself go straight to
   * {@code registry}, its groups; promises are made on {@code loops}; {@code twoWay}: send over the peers'
   * connections too (one channel per pair of endpoints).
   */
  Connections(Supplier<String> addressKey, long connectTimeoutMs, EventExecutorGroup loops, Dialler dialler,
      GroupRegistry registry, boolean twoWay) {
    this.addressKey = addressKey;
    this.connectTimeoutMs = connectTimeoutMs;
    this.loops = loops;
    this.dialler = dialler;
    this.registry = registry;
    this.twoWay = twoWay;
  }

  /** The name of connection number {@code channel} (from 0) to endpoint {@code key}. */
  static String channelKey(String key, int channel) {
    return channel == 0 ? key : key + "#" + channel;
  }

  /** Authenticated connections open now (inbound and outbound). */
  int open() {
    return openLinks.size();
  }

  @Override
  public void opened(Link link, String remoteKey) {
    openLinks.put(link, remoteKey);
  }

  /** {@code remoteKey} dialled {@code link}: messages may go back over it once it has sent something. */
  @Override
  public void heard(Link link, String remoteKey) {
    if (twoWay && link.twoWay() && !closing) {
      heardFrom.put(remoteKey, link);
    }
  }

  /**
   * The connection that endpoint {@code key} dialled to this one and that this endpoint may send over too
   * ({@link Link#twoWay}), if {@code key}'s name is the smaller of the two and {@code connectionKey} names the
   * pair's only connection per direction; else null. Both endpoints of a pair then send their small messages
   * over the connection the smaller one dialled (see {@link TcpTransport}), so each side's messages carry the
   * acknowledgements of the other's instead of costing a packet of their own. Only for a connection the peer
   * has already sent over: until then, bytes sent its way could meet its side's handshake.
   */
  Link twoWayLink(String connectionKey, String key) {
    if (!twoWay || !connectionKey.equals(key) || key.compareTo(addressKey.get()) >= 0) {
      return null;
    }
    Link heard = heardFrom.get(key);
    return heard != null && heard.isActive() ? heard : null;
  }

  /**
   * Writes {@code msg} (ownership passes here) to the endpoint {@code key} over the connection named
   * {@code connectionKey} ({@code key} itself for the first connection to that endpoint, {@link #channelKey}
   * for the others): in-process when it is this endpoint, connecting and authenticating first if there is no
   * connection yet. An {@link IoThread} never waits for that: its message goes once the connection is up.
   *
   * @throws PeerLostException if the connection cannot be made
   */
  void write(String connectionKey, String key, InetSocketAddress remote, ByteBuf msg) {
    if (key.equals(addressKey.get())) {
      deliverLocally(msg);
      return;
    }
    InetSocketAddress target = remote != null ? remote : parse(key);
    if (IoThread.current()) {
      writeWhenConnected(connectionKey, key, target, msg);
      return;
    }
    Link link;
    try {
      link = connection(connectionKey, key, target);
    } catch (RuntimeException e) {
      msg.release();
      throw e;
    }
    link.write(msg);
  }

  /**
   * As {@link #write}, but never waits for a connection: the message goes once the connection is up, or is
   * dropped (released) if it cannot be made. For the notices a rank owes its peers when it fails or leaves
   * (ABORT, LEAVE): dialling a peer that is frozen or gone must not hold back the notices to the others for
   * the connect timeout, and a peer that cannot be reached learns of the failure from its own lost connection.
   */
  void writeWithoutWaiting(String connectionKey, String key, InetSocketAddress remote, ByteBuf msg) {
    if (key.equals(addressKey.get())) {
      deliverLocally(msg);
      return;
    }
    writeWhenConnected(connectionKey, key, remote != null ? remote : parse(key), msg);
  }

  private void writeWhenConnected(String connectionKey, String key, InetSocketAddress target, ByteBuf msg) {
    synchronized (pendingLock) {
      if (pendingFailed) {
        // The endpoint closed (a rank that gives up after it, say): its event loops, which would run the
        // listener below, are stopping, and the message would never be written nor released.
        LOG.debug("{}: message to {} dropped, the endpoint is closed", addressKey.get(), key);
        msg.release();
        return;
      }
      Promise<Link> p = connectionPromise(connectionKey, key, target);
      p.addListener(f -> {
        if (f.isSuccess() && p.getNow().isActive()) {
          try {
            p.getNow().write(msg);
          } catch (CollectiveException e) {
            LOG.debug("{}: message to {} lost with its connection", addressKey.get(), key, e);
          }
        } else {
          msg.release();
        }
      });
    }
  }

  private static InetSocketAddress parse(String key) {
    int colon = key.lastIndexOf(':');
    return new InetSocketAddress(key.substring(0, colon), Integer.parseInt(key.substring(colon + 1)));
  }

  /** Hands a message to this endpoint's own handler logic without a socket (ranks of one group here). */
  private void deliverLocally(ByteBuf msg) {
    try {
      msg.skipBytes(WireFormat.LENGTH_FIELD_BYTES);
      byte type = msg.readByte();
      String self = addressKey.get();
      String bad = MessageDispatcher.dispatch(registry, self, type, msg, new DataHeader(), null);
      if (bad != null) {
        throw new IllegalStateException("a message between ranks of endpoint " + self + " is malformed: " + bad);
      }
    } finally {
      msg.release();
    }
  }

  /** The connection named {@code connectionKey} if it is up, else null (never dials). */
  Link connected(String connectionKey) {
    Promise<Link> p = outbound.get(connectionKey);
    if (p == null || !p.isSuccess()) {
      return null;
    }
    Link link = p.getNow();
    return link.isActive() ? link : null;
  }

  private Promise<Link> connectionPromise(String connectionKey, String key, InetSocketAddress remote) {
    if (pendingFailed) {
      throw new PeerLostException(-1, "endpoint " + addressKey.get() + " is closed: no connection to " + key);
    }
    Promise<Link> p = outbound.get(connectionKey);
    if (p == null) {
      Promise<Link> mine = loops.next().newPromise();
      p = outbound.putIfAbsent(connectionKey, mine);
      if (p == null) {
        p = mine;
        dialler.dial(key, remote, mine);
      }
    }
    return p;
  }

  private Link connection(String connectionKey, String key, InetSocketAddress remote) {
    while (true) {
      Promise<Link> p = connectionPromise(connectionKey, key, remote);
      if (!p.awaitUninterruptibly(connectTimeoutMs + 1000)) {
        outbound.remove(connectionKey, p);
        throw new PeerLostException(-1, "connecting to endpoint " + key + " timed out");
      }
      if (!p.isSuccess()) {
        outbound.remove(connectionKey, p);
        Throwable cause = p.cause();
        if (cause instanceof CollectiveAuthenticationException) {
          throw (CollectiveAuthenticationException) cause;
        }
        throw new PeerLostException(-1, "cannot connect to endpoint " + key + ": " + cause, cause);
      }
      Link link = p.getNow();
      if (link.isActive()) {
        return link;
      }
      outbound.remove(connectionKey, p);
    }
  }

  /**
   * A connection to {@code remoteKey} closed; the next send to that endpoint dials again (and fails if it is
   * gone). An outbound connection that only carried this endpoint's messages (a shared-memory ring's, see
   * {@link Link#twoWay}) loses nothing else; an inbound one, or an outbound one the peer may have sent over,
   * carried the remote ranks' frames, so every rank reached through that endpoint that had not left is lost.
   * A rank leaves (LEAVE) before its sockets close, over every connection its frames took, so a graceful close
   * does not race with the loss (see {@link TcpTransport#endpointLost}).
   */
  @Override
  public void lost(String remoteKey, Link link, boolean isOutbound, String why) {
    openLinks.remove(link);
    heardFrom.remove(remoteKey, link);
    // Whichever of the connections to that endpoint it was.
    outbound.entrySet().removeIf(e -> e.getValue().isDone() && e.getValue().getNow() == link);
    if (isOutbound && !(twoWay && link.twoWay())) {
      return;
    }
    if (!closing) {
      registry.endpointLost(remoteKey, why, openLinks.containsValue(remoteKey));
    }
  }

  /** Closes every connection to {@code remoteKey} (fault injection and health tests). */
  void disconnect(String remoteKey) {
    for (Map.Entry<Link, String> e : openLinks.entrySet()) {
      if (e.getValue().equals(remoteKey)) {
        e.getKey().close();
      }
    }
  }

  /** The endpoint is closing: connections lost from now on are not reported to its ranks. */
  void closing() {
    closing = true;
  }

  /** Closes every open connection. */
  void closeLinks() {
    for (Link link : openLinks.keySet()) {
      link.close();
    }
  }

  /**
   * Fails the connections still being made, so that the messages waiting for them (see
   * {@link #writeWithoutWaiting}) are released by their listeners while the event loops still run them; from
   * now on no connection is made, and a message that would wait for one is released at once.
   */
  void failPending() {
    synchronized (pendingLock) {
      pendingFailed = true;
    }
    for (Promise<Link> p : outbound.values()) {
      p.tryFailure(new PeerLostException(-1, "endpoint " + addressKey.get() + " closed"));
    }
  }
}
