package io.sparkcollective.core.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.api.RemoteFailureException;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.transport.CallSignature;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.Inbox;
import io.sparkcollective.core.transport.LinkReceipts;
import io.sparkcollective.core.transport.PostedReceive;
import io.sparkcollective.core.transport.Transport;
import io.sparkcollective.core.transport.tcp.direct.CallerDrivenIo;
import io.sparkcollective.core.transport.tcp.link.FrameMessage;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.PeerText;
import io.sparkcollective.core.transport.tcp.link.Receiver;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank's view of a group over a {@link TcpEndpoint}: frames to a peer are sent as DATA messages on the
 * connection to the peer's endpoint (or handed over in-process when the peer lives on the same endpoint);
 * received ones are queued in this rank's {@link Inbox}. A receiving thread drives the endpoint's sockets
 * itself ({@link CallerDrivenIo}, the default) or waits for Netty's event loops to deliver.
 *
 * <p>Buffer ownership: {@link #send} writes the header into the frame's headroom and hands the frame itself
 * to the connection as one message ({@link FrameMessage}); the frame returns to the pool once written (or on
 * failure). A received payload is read straight into a pooled frame ({@link #acceptData}), or lent from the
 * shared-memory ring, or (Netty's pipeline) copied out of the received message, which its reader releases.
 */
public final class TcpTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);
  /** Most connections a rank's frames to one peer take (its own, and one its peer's endpoint dialled). */
  static final int MAX_LEAVE_COPIES = 2;

  private final TcpEndpoint endpoint;
  private final long groupId;
  private final String groupName;
  private final int rank;
  private final int size;
  private final InetSocketAddress[] peerAddresses;
  private final String[] peerKeys;
  private final Inbox inbox;
  private final JoinState join;
  private final boolean checksum;
  /**
   * Name of the connection this rank's messages to each peer take: with several connections per pair of
   * endpoints, rank r uses number r mod channels, so everything one rank sends to a peer (JOIN, DATA,
   * LEAVE) stays on one connection, in order, while ranks of one executor send in parallel.
   */
  private final String[] connectionKeys;
  /** Peers whose rank is registered on this same endpoint (frames to them never touch a socket). */
  private final boolean[] sameEndpoint;
  /** The connection to each peer as {@link #acquireFor} last found it (the sending thread's; a cache). */
  private final Link[] claimLinks;
  /** See {@link #chooseRoutes}: set once, before the group's first operation (all null until then). */
  private volatile Link[] smallRoutes;
  /** LEAVE notices that came from each peer (see {@link #onLeave}). */
  private final AtomicIntegerArray leaves;
  /** The connection each peer's frames came through last (a hint for the receiving thread; races are harmless). */
  private final Link[] routes;
  /** Where links deliver this rank's DATA payloads. */
  private final Receiver receiver = new Receiver() {
    @Override
    public Frame accept(String remoteKey, DataHeader h, int payloadBytes, boolean lent) {
      if (!speaksFor(remoteKey, h.source())) {
        endpoint.registry().dropped(remoteKey, "DATA", groupId, h.source(), rank);
        return null;
      }
      return acceptData(h, payloadBytes, lent, null);
    }

    @Override
    public Frame accept(String remoteKey, DataHeader h, int payloadBytes, PostedReceive.Reader reader) {
      if (!speaksFor(remoteKey, h.source())) {
        endpoint.registry().dropped(remoteKey, "DATA", groupId, h.source(), rank);
        return null;
      }
      return acceptData(h, payloadBytes, false, reader);
    }

    @Override
    public void complete(Frame f, int payloadBytes, int flags, int crc, long receiveNanos) {
      completeData(f, payloadBytes, flags, crc, receiveNanos);
    }

    @Override
    public void arrivedThrough(int source, Link link) {
      if (routes[source] != link) {
        routes[source] = link;
      }
    }
  };
  /** Memory this rank's waiting thread offers for the next payload from each peer (see {@link #post}). */
  private final AtomicReferenceArray<PostedReceive> posted;
  /** What came from each peer over its connection, and how fast. */
  private final LinkReceipts receipts;
  private volatile boolean closed;
  /**
   * Held while this rank records its failure and queues its ABORT notices, and while it queues its LEAVEs: a
   * thread woken by the failure (the rank's own, which then closes) cannot queue a LEAVE before the ABORTs, so
   * peers learn why the rank failed before that it left.
   */
  private final Object notices = new Object();

  TcpTransport(TcpEndpoint endpoint, long groupId, String groupName, int rank, List<InetSocketAddress> peers,
      String[] peerKeys) {
    this.endpoint = endpoint;
    this.groupId = groupId;
    this.groupName = groupName;
    this.rank = rank;
    this.size = peers.size();
    this.peerAddresses = peers.toArray(new InetSocketAddress[0]);
    this.peerKeys = peerKeys;
    this.inbox = new Inbox(size, endpoint.clock(), endpoint.pool());
    this.receipts = new LinkReceipts(size);
    this.posted = new AtomicReferenceArray<>(size);
    this.join = new JoinState(groupName, rank, peerKeys);
    this.checksum = endpoint.config().checksum();
    this.connectionKeys = new String[size];
    this.sameEndpoint = new boolean[size];
    this.claimLinks = new Link[size];
    this.routes = new Link[size];
    this.smallRoutes = new Link[size];
    this.leaves = new AtomicIntegerArray(size);
    int channel = rank % endpoint.config().channels();
    for (int p = 0; p < size; p++) {
      connectionKeys[p] = TcpEndpoint.channelKey(peerKeys[p], channel);
      sameEndpoint[p] = peerKeys[p].equals(endpoint.addressKey());
    }
  }

  @Override
  public LinkReceipts receipts() {
    return receipts;
  }

  /** Frames received and not yet taken (tests). */
  int queuedFrames() {
    return inbox.queued();
  }

  String connectionKey(int peer) {
    return connectionKeys[peer];
  }

  long groupId() {
    return groupId;
  }

  String groupName() {
    return groupName;
  }

  String peerKey(int peer) {
    return peerKeys[peer];
  }

  InetSocketAddress peerAddress(int peer) {
    return peerAddresses[peer];
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  /** Ranks whose endpoints have the same address share a process (an executor). */
  @Override
  public int[] nodes() {
    int[] nodes = new int[size];
    java.util.Map<InetSocketAddress, Integer> ids = new java.util.HashMap<>();
    for (int r = 0; r < size; r++) {
      nodes[r] = ids.computeIfAbsent(peerAddresses[r], a -> ids.size());
    }
    return nodes;
  }

  /** Ranks of this endpoint, and endpoints of this host while its connections offer shared-memory rings. */
  @Override
  public boolean memoryToAll() {
    for (int p = 0; p < size; p++) {
      if (!sameEndpoint[p] && !endpoint.sharedMemoryTo(peerAddresses[p])) {
        return false;
      }
    }
    return true;
  }

  /** Every endpoint of the group has the host address of the first. */
  @Override
  public boolean oneHost() {
    for (InetSocketAddress a : peerAddresses) {
      if (!java.util.Objects.equals(a.getAddress(), peerAddresses[0].getAddress())) {
        return false;
      }
    }
    return true;
  }

  /**
   * True when the group spans more than one endpoint and no two of its endpoints could share memory: none
   * has the host address of another, or the settings keep payloads on the sockets. Decided from the group's
   * address list and the settings, which every rank holds alike.
   */
  @Override
  public boolean socketsOnly() {
    int[] node = nodes();
    boolean rings = endpoint.config().sharedMemoryPayloads();
    java.util.Map<InetAddress, Integer> nodeOfHost = new java.util.HashMap<>();
    boolean several = false;
    for (int r = 0; r < size; r++) {
      several |= node[r] != node[0];
      Integer other = nodeOfHost.putIfAbsent(peerAddresses[r].getAddress(), node[r]);
      if (rings && other != null && other != node[r]) {
        return false;
      }
    }
    return several;
  }

  @Override
  public String describe(int r) {
    return "rank " + r + " (" + peerKeys[r] + ")";
  }

  @Override
  public Frame acquire(int payloadBytes) {
    return endpoint.pool().acquire(payloadBytes);
  }

  /**
   * With every DATA message going whole into the peer's shared-memory ring, a frame whose payload is the place
   * in that ring where its message goes: the engine writes the segment there itself, and {@link #send} adds the
   * header and publishes it, instead of copying the segment into a pooled frame and from there into the ring.
   * Otherwise (no ring, ring full, checksums on, a rank of this process) a pooled frame.
   */
  @Override
  public Frame acquireFor(int peer, int payloadBytes) {
    if (!checksum && !sameEndpoint[peer]) {
      Link link = claimLinks[peer];
      if (link == null || !link.isActive()) {
        link = endpoint.connected(connectionKeys[peer]);
        claimLinks[peer] = link;
      }
      if (link != null && link.claims()) {
        Frame f = endpoint.pool().acquire(0);
        boolean claimed = false;
        try {
          claimed = link.claim(f, DataHeader.BYTES, payloadBytes);
        } finally {
          if (!claimed) {
            endpoint.pool().release(f);
          }
        }
        if (claimed) {
          return f;
        }
      }
    }
    return acquire(payloadBytes);
  }

  @Override
  public void release(Frame frame) {
    endpoint.pool().release(frame);
  }

  @Override
  public int maxFrameBytes() {
    return endpoint.pool().maxCapacity();
  }

  @Override
  public void operationBegins() {
    CallerDrivenIo io = endpoint.callerIo();
    if (io != null) {
      io.operationBegins();
    }
  }

  @Override
  public void operationEnds() {
    CallerDrivenIo io = endpoint.callerIo();
    if (io != null) {
      io.operationEnds();
    }
  }

  @Override
  public long nanoTime() {
    return endpoint.clock().nanoTime();
  }

  // ------------------------------------------------------------------------------------------- joining

  void onJoin(String remoteKey, int source, int claimedSize) {
    String refusal = join.admit(remoteKey, source, claimedSize);
    if (refusal == null) {
      return;
    }
    LOG.warn("{} rank {}: refused join from {}: {}", groupName, rank, remoteKey, refusal);
    if (source >= 0 && source < size) {
      ByteBuf out = ControlMessages.refuseJoin(PooledByteBufAllocator.DEFAULT, groupId, rank, source, refusal);
      try {
        endpoint.write(remoteKey, null, out);
      } catch (CollectiveException ignored) {
        // Nothing more to tell a peer we cannot reach.
      }
    }
  }

  /** Whether {@code peer}'s JOIN has reached this rank. */
  boolean hasJoined(int peer) {
    return join.hasJoined(peer);
  }

  void onJoinRefused(int source, String reason) {
    join.refused(source, PeerText.escape(reason));
  }

  void awaitJoined(long deadlineNanos, Cancellation cancellation) {
    join.await(deadlineNanos, endpoint.config().joinTimeoutMs(), endpoint.clock(), inbox::failure, cancellation);
  }

  /** Throws if the joining rank's caller was cancelled (or its thread interrupted). */
  void checkCancelled(Cancellation cancellation) {
    join.checkCancelled(cancellation);
  }

  // ------------------------------------------------------------------------------------------- sending

  @Override
  public void send(int peer, Frame frame) {
    ByteBuf message = null;
    Link claimed = null;
    int claimedBytes = 0;
    try {
      if (frame.lender() instanceof Link && frame.lender() != claimLinks[peer]) {
        throw new IllegalStateException("a frame lent its place on the way to another peer, sent to " + describe(peer));
      }
      CollectiveException failed = inbox.failure();
      if (failed != null) {
        throw failed;
      }
      if (sameEndpoint[peer]) {
        // A rank of this process: hand the frame itself over, no copy and no serialisation.
        TcpTransport local = endpoint.registered(groupId, peer);
        if (local != null) {
          local.inbox.deliver(rank, frame);
          return;
        }
      }
      if (frame.shared() != null) {
        throw new IllegalStateException("a frame referring to memory of this process cannot go to " + describe(peer));
      }
      int n = frame.payload().size();
      if (frame.lender() instanceof Link) {
        claimed = (Link) frame.lender();
        claimedBytes = n;
      } else {
        // The header goes into the frame's headroom, so header and payload leave as one buffer, without a
        // copy and without allocating; the frame returns to the pool when Netty releases the message.
        FrameMessage header = FrameMessage.of(frame, endpoint.pool());
        message = header;
        DataHeader.write(header, frame, rank, peer, groupId, checksum ? DataHeader.FLAG_CRC32C : 0,
            checksum ? crc(frame.payload().view(n)) : 0, n);
      }
    } catch (RuntimeException e) {
      endpoint.pool().release(frame);
      throw e;
    }
    if (claimed != null) {
      sendClaimed(peer, frame, claimed, claimedBytes);
      return;
    }
    try {
      Link route = smallRoute(peer, frame);
      if (route != null) {
        route.write(message);
      } else {
        endpoint.write(connectionKeys[peer], peerKeys[peer], peerAddresses[peer], message);
      }
    } catch (CollectiveException e) {
      throw lostSending(peer, e);
    }
  }

  /**
   * Where this rank sends to each peer the DATA of operations of {@link Tuning#TWO_WAY_MAX_BYTES} or less: the
   * connection the peer's endpoint dialled to this one, where the pair shares it both ways (see
   * {@link Connections#twoWayLink}), else null (this rank's own connection, as larger operations). Chosen once the
   * group has formed: the peer's JOIN came over that connection, so the peer reads from it.
   */
  void chooseRoutes() {
    Link[] chosen = new Link[size];
    for (int p = 0; p < size; p++) {
      if (p != rank && !sameEndpoint[p]) {
        chosen[p] = endpoint.twoWayLink(connectionKeys[p], peerKeys[p]);
      }
    }
    smallRoutes = chosen;
  }

  /**
   * The ends ({@code local->remote}) of the connection this rank's operations to {@code peer} take: {@code small}
   * ones (see {@link #chooseRoutes}) or larger ones; null if there is none (tests).
   */
  String connectionTo(int peer, boolean small) {
    Link shared = smallRoutes[peer];
    Link link = small && shared != null ? shared : endpoint.connected(connectionKeys[peer]);
    return link == null ? null : link.ends();
  }

  /**
   * The connection {@code frame} goes to {@code peer} over if not this rank's own: one operation's frames all
   * take one connection (by its size, which every frame of it carries), so they keep their order.
   */
  private Link smallRoute(int peer, Frame frame) {
    Link route = smallRoutes[peer];
    if (route == null || frame.count() > Tuning.TWO_WAY_MAX_BYTES / DType.byteSizeOfWireCode(frame.dtype())) {
      return null;
    }
    return route;
  }

  /**
   * The payload goes from the caller's memory to the socket in one gathering write with the header, when the
   * link to {@code peer} is a plain connection driven by callers (see {@link Link#writeFrom}) and frames carry
   * no checksum.
   */
  @Override
  public boolean sendFrom(int peer, Frame frame, ByteBuffer payload) {
    int n = payload.remaining();
    if (checksum || sameEndpoint[peer] || n > endpoint.pool().maxCapacity() || frame.shared() != null
        || frame.lender() != null) {
      return false;
    }
    Link link = smallRoute(peer, frame);
    if (link == null) {
      link = claimLinks[peer];
      if (link == null || !link.isActive()) {
        link = endpoint.connected(connectionKeys[peer]);
        claimLinks[peer] = link;
        if (link == null) {
          return false;
        }
      }
    }
    CollectiveException failed = inbox.failure();
    if (failed != null) {
      endpoint.pool().release(frame);
      throw failed;
    }
    FrameMessage header = FrameMessage.of(frame, endpoint.pool());
    DataHeader.writeHeader(header, frame, rank, peer, groupId, 0, 0, n);
    try {
      if (!link.writeFrom(header, payload)) {
        return false;
      }
    } catch (CollectiveException e) {
      throw lostSending(peer, e);
    }
    return true;
  }

  /** Sends a frame from {@link #acquireFor} whose payload lies where {@code link} reads its message from. */
  private void sendClaimed(int peer, Frame frame, Link link, int n) {
    try {
      DataHeader.write(link.claimed(), frame, rank, peer, groupId, 0, 0, n);
      link.publishClaimed();
    } catch (CollectiveException e) {
      throw lostSending(peer, e);
    } finally {
      endpoint.pool().release(frame);
    }
  }

  /** A send to {@code peer} failed with {@code e}: fails this rank with the lost peer; returns that failure. */
  private PeerLostException lostSending(int peer, CollectiveException e) {
    PeerLostException lost = new PeerLostException(peer, "rank " + rank + " of group " + groupName
        + " cannot send to " + describe(peer) + ": " + e.getMessage(), e);
    abort(lost);
    return lost;
  }

  private static int crc(ByteBuffer b) {
    CRC32C c = new CRC32C();
    c.update(b);
    return (int) c.getValue();
  }

  // ----------------------------------------------------------------------------------------- receiving

  /** Where links deliver this rank's DATA payloads (see {@link Receiver}). */
  Receiver receiver() {
    return receiver;
  }

  /**
   * The frame to receive the {@code n} payload bytes of the DATA message with header {@code h} into, with that
   * header set; null if the message cannot be for this rank (the rank is failed then, and the payload is to be
   * skipped). With {@code lent} the frame has no payload memory of its own (the transport lends it the
   * payload).
   */
  private Frame acceptData(DataHeader h, int n, boolean lent, PostedReceive.Reader reader) {
    int source = h.source();
    if (n > endpoint.pool().maxCapacity()) {
      abort(new CollectiveException("rank " + rank + " of group " + groupName + " received a frame of " + n
          + " bytes from " + describe(source) + ", more than the largest segment " + endpoint.pool().maxCapacity()
          + " (are segmentBytes settings the same on all ranks?)"));
      return null;
    }
    PostedReceive first = reader != null ? posted.get(source) : null;
    if (first != null) {
      Frame f = endpoint.pool().acquire(0);
      h.copyTo(f);
      for (PostedReceive p = first.nextToLookAt(); p != null; p = p.next()) {
        if (p.matches(f, n)) {
          if (p.take(reader, f)) {
            first.tookInChain(p);
            return f;
          }
          break;
        }
      }
      endpoint.pool().release(f);
    }
    Frame f = endpoint.pool().acquire(lent ? 0 : n);
    h.copyTo(f);
    return f;
  }

  /**
   * Payloads are read into offered memory only from sockets (the reader says so), never from rings or Netty's
   * pipelines, and without checksums (as {@link #sendFrom}).
   */
  @Override
  public boolean post(PostedReceive p) {
    int peer = p.source();
    // One op's offers per peer at a time (another op of the rank on another tag copies as before).
    return !checksum && !sameEndpoint[peer] && posted.compareAndSet(peer, null, p);
  }

  @Override
  public void unpost(PostedReceive first) {
    posted.compareAndSet(first.source(), first, null);
    for (PostedReceive p = first; p != null; p = p.next()) {
      p.withdraw();
    }
  }

  /** Checks and queues a frame from {@link #acceptData} once its {@code n} payload bytes are in. */
  private void completeData(Frame f, int n, int flags, int crc, long receiveNanos) {
    if (f.lender() instanceof PostedReceive) {
      ((PostedReceive) f.lender()).filled();
    }
    if ((flags & DataHeader.FLAG_CRC32C) != 0) {
      int actual = crc(f.payload().view(n));
      if (actual != crc) {
        int source = f.source();
        long seq = f.seq();
        int step = f.step();
        endpoint.pool().release(f);
        abort(new CollectiveException("rank " + rank + " of group " + groupName + " received a corrupt frame from "
            + describe(source) + " (CRC32C mismatch, operation #" + seq + " step " + step + ")"));
        return;
      }
    }
    f.payload().size(n);
    receipts.record(f.source(), n, receiveNanos);
    inbox.deliver(f.source(), f);
  }

  /**
   * Whether endpoint {@code remoteKey} may speak for rank {@code source} of this group: only the endpoint the
   * group names for a rank sends its frames and notices (a connection is authenticated as one endpoint).
   */
  boolean speaksFor(String remoteKey, int source) {
    return source >= 0 && source < size && source != rank && peerKeys[source].equals(remoteKey);
  }

  void onAbort(int source, int origin, String reason) {
    int from = origin >= 0 && origin < size ? origin : source;
    inbox.fail(new RemoteFailureException(from, PeerText.escape(reason)));
  }

  /**
   * Rank {@code source} left, in one of {@code copies} notices, one over each connection its frames to this rank
   * may have taken: it is gone once all have come, so that no frame still on its way over another connection
   * finds it gone.
   */
  void onLeave(int source, int copies) {
    if (source < 0 || source >= size) {
      return;
    }
    if (copies < 1 || copies > MAX_LEAVE_COPIES) {
      abort(new CollectiveException("rank " + rank + " of group " + groupName + " received a LEAVE from "
          + describe(source) + " sent over " + copies + " connections (1 to " + MAX_LEAVE_COPIES + " expected)"));
      return;
    }
    if (leaves.incrementAndGet(source) == copies) {
      markLeft(source);
    }
  }

  /** LEAVE notices that came from rank {@code source} (tests). */
  int leavesFrom(int source) {
    return leaves.get(source);
  }

  /** Whether rank {@code source} left this group (tests). */
  boolean hasLeft(int source) {
    return inbox.isGone(source);
  }

  private void markLeft(int source) {
    inbox.markGone(source, new PeerLostException(source, describe(source) + " left group " + groupName));
  }

  /**
   * A connection that carries the frames of {@code remoteKey}'s ranks closed ({@code othersOpen}: another one to
   * that endpoint is still open): the group fails, naming the first of them that had not left it. Ranks that left
   * (their LEAVE came first on that same connection) are gone already; their endpoint closing afterwards is no
   * failure. A rank whose LEAVE came over some of its connections only left too: while another connection is open,
   * what it sent over that one is still coming; with none open, it is gone.
   */
  void endpointLost(String remoteKey, String why, boolean othersOpen) {
    for (int p = 0; p < size; p++) {
      if (p != rank && peerKeys[p].equals(remoteKey) && !inbox.isGone(p)) {
        if (leaves.get(p) > 0) {
          if (!othersOpen) {
            markLeft(p);
          }
          continue;
        }
        abort(new PeerLostException(p, "rank " + rank + " of group " + groupName + " lost " + describe(p) + ": "
            + why));
        return;
      }
    }
  }

  @Override
  public Frame receive(int peer, int stream, long seq, long deadlineNanos) {
    CallerDrivenIo io = endpoint.callerIo();
    return io != null ? io.receive(inbox, peer, stream, seq, deadlineNanos, routes[peer])
        : inbox.receive(peer, stream, seq, deadlineNanos);
  }

  // ------------------------------------------------------------------------------------------ failures

  @Override
  public void abort(CollectiveException cause) {
    synchronized (notices) {
      inbox.fail(cause);
      if (!inbox.claimAbortNotice()) {
        return;
      }
      int origin = inbox.failureOrigin(rank);
      String reason = inbox.failureReason();
      for (int p = 0; p < size; p++) {
        if (p == rank) {
          continue;
        }
        ByteBuf out = ControlMessages.abort(PooledByteBufAllocator.DEFAULT, groupId, rank, p, origin, reason);
        endpoint.writeWithoutWaiting(connectionKeys[p], peerKeys[p], peerAddresses[p], out);
      }
    }
  }

  @Override
  public String findDisagreement(int stream, long seq, int except, CallSignature call) {
    return inbox.findDisagreement(stream, seq, except, call);
  }

  @Override
  public CollectiveException failure() {
    return inbox.failure();
  }

  @Override
  public CollectiveException departure() {
    return inbox.departure();
  }

  @Override
  public void disconnect(int peer, String reason) {
    endpoint.disconnect(peerKeys[peer]);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    endpoint.unregister(this);
    inbox.fail(new CollectiveException("rank " + rank + " of group " + groupName + " is closed"));
    inbox.close();
    synchronized (notices) {
      for (int p = 0; p < size; p++) {
        if (p == rank) {
          continue;
        }
        Link shared = smallRoutes[p];
        int copies = shared == null ? 1 : 2;
        if (shared != null) {
          try {
            shared.write(ControlMessages.leave(PooledByteBufAllocator.DEFAULT, groupId, rank, p, copies));
          } catch (CollectiveException e) {
            LOG.debug("{} rank {}: LEAVE to {} lost with its connection", groupName, rank, describe(p), e);
          }
        }
        ByteBuf out = ControlMessages.leave(PooledByteBufAllocator.DEFAULT, groupId, rank, p, copies);
        endpoint.writeWithoutWaiting(connectionKeys[p], peerKeys[p], peerAddresses[p], out);
      }
    }
  }
}
