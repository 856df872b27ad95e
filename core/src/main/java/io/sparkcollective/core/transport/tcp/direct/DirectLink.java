package io.sparkcollective.core.transport.tcp.direct;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.kernel.WireBuffer;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.PostedReceive;
import io.sparkcollective.core.transport.tcp.link.FrameMessage;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkKeys;
import io.sparkcollective.core.transport.tcp.link.MessageTags;
import io.sparkcollective.core.transport.tcp.link.RateLimitedLog;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import io.sparkcollective.core.transport.tcp.shm.SharedMemoryRing;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An authenticated plain TCP connection whose bytes application threads move ({@link CallerDrivenIo}).
 *
 * <p>Writing: any thread, under the write lock, writes straight to the non-blocking socket; what the socket
 * does not take is queued and flushed by whoever drives when the socket becomes writable. A message is
 * released once written (a frame's message returns the frame to its pool).
 *
 * <p>Reading: only the driving thread, under the read lock, through the connection's {@link DirectReader}.
 *
 * <p>Same host: an outbound connection to an endpoint of this host offers a {@link SharedMemoryRing}; once
 * the receiver has mapped it, whole DATA messages go into the ring as records and nothing crosses the socket
 * unless the receiver is blocked in a poll (then one wake-up per block): no system call, no kernel copy and no
 * TCP processing per message. With DATA sealed, only payloads of at least {@link Tuning#SHARED_MIN_BYTES} go
 * into the ring and their sealed headers cross the socket. What does not fit in the ring goes over the socket;
 * the receiver matches frames by sequence, and reads the ring before any message that came over the socket, so
 * nothing sent before a control message (LEAVE, ABORT) arrives after it.
 *
 * <p>Lock order: the read lock may be held while writing (a frame's delivery can fail the group, which tells
 * the peers); the write lock is never held while taking the read lock.
 */
final class DirectLink implements Link, Frame.Lender, PostedReceive.Reader {
  private static final Logger LOG = LoggerFactory.getLogger(DirectLink.class);
  /** Reads per call before the driver moves on to other connections. */
  private static final int READS_PER_TURN = Tuning.READS_PER_TURN;
  /** Smallest payload sent through a shared-memory ring; smaller ones are as cheap over the socket. */
  static final int SHARED_MIN_BYTES = Tuning.SHARED_MIN_BYTES;

  private final CallerDrivenIo io;
  private final SocketChannel socket;
  private final String remoteKey;
  private final boolean outbound;
  private final Object readLock = new Object();
  private final ReentrantLock writeLock = new ReentrantLock();
  private final ArrayDeque<ByteBuf> pending = new ArrayDeque<>();
  /** Header and payload of a {@link #writeFrom} (under the write lock). */
  private final ByteBuffer[] gather = new ByteBuffer[2];
  private final DirectReader reader;
  /** Seals what this side sends, in the order it enters the socket (under the write lock). */
  private final MessageSealer outgoing;
  private SelectionKey key;
  private boolean writeInterest;
  private volatile boolean closed;
  private volatile long lastReadNanos;
  private volatile long lastWriteNanos;
  /** This side's ring for what it sends (guarded by the write lock). */
  private SharedMemoryRing sendRing;
  /** Whether whole DATA messages go into the ring (DATA not sealed), or only large payloads. */
  private final boolean records;
  /** DATA messages written to the socket (under the write lock). */
  private long socketData;
  // A DATA message claimed in the send ring (see claim): the claiming thread holds the write lock until it
  // publishes the message or releases its frame. The window and the buffer are the ring's memory, made once
  // per ring; a frame keeps the window only until its release, right after the publish.
  private boolean claimOpen;
  private long claimLoan;
  private int claimOffset;
  private SharedMemoryRing claimRing;
  private WireBuffer claimWindow;
  private ByteBuf claimMemory;
  /** See {@link Link#twoWay}: no shared-memory ring would carry this connection's DATA one way only. */
  private final boolean twoWay;

  DirectLink(CallerDrivenIo io, SocketChannel socket, String remoteKey, boolean outbound, LinkKeys keys)
      throws IOException {
    this.io = io;
    this.socket = socket;
    this.remoteKey = remoteKey;
    this.outbound = outbound;
    this.outgoing = keys.outgoing;
    this.records = !outgoing.coversData();
    this.reader = new DirectReader(this, io, socket, remoteKey, keys.incoming);
    socket.configureBlocking(false);
    this.twoWay = !io.offersRings() || !remoteOnThisHost();
    long now = io.clock().nanoTime();
    this.lastReadNanos = now;
    this.lastWriteNanos = now;
  }

  CallerDrivenIo io() {
    return io;
  }

  void register(Selector selector) throws IOException {
    writeLock.lock();
    try {
      key = socket.register(selector, SelectionKey.OP_READ, this);
    } finally {
      writeLock.unlock();
    }
  }

  /** Offers the peer a shared-memory ring for this connection's payloads if it runs on this host. */
  void offerSharedMemory() {
    int capacity = io.config().sharedMemoryBytes();
    Path dir = io.config().sharedMemoryDir();
    // io.offersRings() is also what AUTO's choice between hosts' and memory's algorithms assumes (memoryToAll).
    if (!outbound || !io.offersRings() || !remoteOnThisHost()) {
      return;
    }
    SharedMemoryRing ring;
    try {
      ring = SharedMemoryRing.create(dir, capacity);
    } catch (IOException | RuntimeException e) {
      LOG.info("{}: no shared-memory ring for the connection to {} ({}); payloads go over the socket",
          io.addressKey(), remoteKey, e.toString());
      return;
    }
    ByteBuf out = ControlMessages.sharedMemoryOffer(PooledByteBufAllocator.DEFAULT, ring.token(), capacity,
        ring.path().getFileName().toString());
    writeLock.lock();
    try {
      if (closed) {
        ring.close();
        out.release();
        return;
      }
      sendRing = ring;
    } finally {
      writeLock.unlock();
    }
    try {
      write(out);
    } catch (PeerLostException e) {
      // Closed meanwhile; shut() deleted the ring.
    }
  }

  /**
   * The peer declined the ring with {@code token}: it is closed (its file deleted, its memory unmapped) and
   * payloads keep going over the socket. Returns why the connection must close (no such offer), or null.
   */
  String ringDeclined(long token) {
    SharedMemoryRing ring;
    writeLock.lock();
    try {
      ring = sendRing;
      if (ring == null || ring.token() != token) {
        return "it declined a ring that was not offered";
      }
      sendRing = null;
    } finally {
      writeLock.unlock();
    }
    ring.close();
    LOG.info("{}: {} declined the shared-memory ring; payloads go over the socket", io.addressKey(), remoteKey);
    return null;
  }

  private boolean remoteOnThisHost() {
    try {
      return CallerDrivenIo.onThisHost(((InetSocketAddress) socket.getRemoteAddress()).getAddress());
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  String remoteKey() {
    return remoteKey;
  }

  boolean outbound() {
    return outbound;
  }

  @Override
  public boolean twoWay() {
    return twoWay;
  }

  @Override
  public String ends() {
    try {
      return Link.ends(socket.getLocalAddress(), socket.getRemoteAddress());
    } catch (IOException e) {
      return "closed";
    }
  }

  long lastReadNanos() {
    return lastReadNanos;
  }

  long lastWriteNanos() {
    return lastWriteNanos;
  }

  @Override
  public boolean isActive() {
    return !closed;
  }

  // ------------------------------------------------------------------------------------------- writing

  @Override
  public void write(ByteBuf msg) {
    IOException failed;
    writeLock.lock();
    try {
      ByteBuf out = msg;
      if (closed) {
        out.release();
        throw new PeerLostException(-1, "the connection to endpoint " + remoteKey + " is closed");
      }
      if (claimOpen) {
        // Only the claiming thread gets here meanwhile: it would overtake, or overwrite, its own claim.
        out.release();
        throw new IllegalStateException("a message written to " + this + " while this thread's claim is open");
      }
      byte type;
      try {
        type = out.getByte(out.readerIndex() + WireFormat.TYPE_OFFSET);
        if (type == WireFormat.DATA && sendRing != null) {
          if (records) {
            ByteBuffer whole = out.internalNioBuffer(out.readerIndex(), out.readableBytes());
            if (sendRing.putRecord(whole, whole.position(), whole.remaining(), socketData)) {
              out.release();
              if (!sendRing.wakeReceiver()) {
                return;
              }
              out = ControlMessages.sharedMemoryWake(PooledByteBufAllocator.DEFAULT);
              type = WireFormat.SHM_WAKE;
            }
          } else {
            toRing(out);
          }
        }
      } catch (RuntimeException e) {
        out.release();
        throw e;
      }
      failed = toSocket(out, type);
    } finally {
      writeLock.unlock();
    }
    if (failed != null) {
      failWrite(failed);
    }
  }

  /**
   * Header and payload in one gathering write, straight from the caller's memory: the copy into a frame that
   * {@link #write} needs is saved. Only when nothing waits in the queue (order), no ring takes this link's DATA
   * and DATA is not sealed (the seal covers the whole message in one buffer).
   */
  @Override
  public boolean writeFrom(ByteBuf header, ByteBuffer payload) {
    if (!records || sendRing != null) {
      return false;
    }
    IOException failed = null;
    writeLock.lock();
    try {
      if (closed || claimOpen || sendRing != null || !pending.isEmpty()) {
        // A closed link says so through write(); a claim open on this thread is write()'s error too.
        return false;
      }
      ByteBuffer[] both = gather;
      both[0] = header.internalNioBuffer(header.readerIndex(), header.readableBytes());
      both[1] = payload;
      try {
        socketData++;
        long n = socket.write(both);
        if (n > 0) {
          lastWriteNanos = io.clock().nanoTime();
        }
        io.countWrittenFrom();
        int rest = both[0].remaining() + payload.remaining();
        if (rest > 0) {
          // The socket is full: the rest goes into memory of the link's own, so the caller's is not read later.
          FrameMessage spill = FrameMessage.of(io.pool().acquire(payload.remaining()), io.pool());
          spill.writeBytes(both[0]).writeBytes(payload);
          io.countSpilled();
          failed = queue(spill);
        }
      } catch (IOException e) {
        failed = e;
      } finally {
        both[0] = null;
        both[1] = null;
        header.release();
      }
    } finally {
      writeLock.unlock();
    }
    if (failed != null) {
      failWrite(failed);
    }
    return true;
  }

  /**
   * Sends {@code out} (ownership passes here) of {@code type} through the socket, or queues it behind what waits
   * (under the write lock). Returns the failure that closes the connection, or null.
   */
  private IOException toSocket(ByteBuf out, byte type) {
    try {
      if (type == WireFormat.DATA) {
        socketData++;
      }
      if (MessageTags.sealed(type, outgoing)) {
        MessageTags.seal(out, outgoing);
      }
      if (pending.isEmpty()) {
        writeSome(out);
        if (!out.isReadable()) {
          out.release();
          return null;
        }
      }
    } catch (IOException e) {
      out.release();
      return e;
    }
    return queue(out);
  }

  /**
   * Queues {@code out} (ownership passes here) behind what waits for the socket's writability (under the write
   * lock); returns the failure that closes the connection, or null.
   */
  private IOException queue(ByteBuf out) {
    pending.addLast(out);
    if (!writeInterest) {
      writeInterest = true;
      io.writesQueued(1);
      try {
        key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
      } catch (java.nio.channels.CancelledKeyException e) {
        return new IOException(e.toString());
      }
      io.writeInterestChanged();
    }
    return null;
  }

  /** Closes the connection after a failed write (not under the write lock) and tells the writer. */
  private void failWrite(IOException failed) {
    fail("write failed: " + failed);
    throw new PeerLostException(-1, "cannot write to endpoint " + remoteKey + ": " + failed);
  }

  @Override
  public boolean claims() {
    return records && !closed && sendRing != null;
  }

  @Override
  public boolean claim(Frame frame, int headerBytes, int payloadBytes) {
    if (!records || closed) {
      return false;
    }
    writeLock.lock();
    boolean claimed = false;
    try {
      if (claimOpen) {
        throw new IllegalStateException("a second claim on " + this + " while this thread's first is open");
      }
      if (closed || sendRing == null) {
        return false;
      }
      int offset = sendRing.claimRecord(headerBytes + payloadBytes, socketData);
      if (offset < 0) {
        return false;
      }
      if (claimRing != sendRing) {
        claimRing = sendRing;
        claimWindow = new WireBuffer(sendRing.dataArea());
        claimMemory = Unpooled.wrappedBuffer(sendRing.dataArea());
      }
      claimOffset = offset;
      claimOpen = true;
      claimWindow.start(offset + headerBytes);
      claimWindow.size(0);
      frame.lend(claimWindow, this, ++claimLoan);
      claimed = true;
      return true;
    } finally {
      if (!claimed) {
        writeLock.unlock();
      }
    }
  }

  @Override
  public ByteBuf claimed() {
    checkClaim();
    return claimMemory.setIndex(0, claimOffset);
  }

  @Override
  public void publishClaimed() {
    checkClaim();
    IOException failed = null;
    try {
      claimOpen = false;
      sendRing.publishClaim(claimMemory.writerIndex() - claimOffset);
      io.countClaimed();
      if (sendRing.wakeReceiver()) {
        failed = toSocket(ControlMessages.sharedMemoryWake(PooledByteBufAllocator.DEFAULT), WireFormat.SHM_WAKE);
      }
    } finally {
      writeLock.unlock();
    }
    if (failed != null) {
      failWrite(failed);
    }
  }

  private void checkClaim() {
    if (!claimOpen || !writeLock.isHeldByCurrentThread()) {
      throw new IllegalStateException("this thread holds no claim on " + this);
    }
  }

  /** A claimed frame was released: a claim not yet published is dropped (the frame was not sent). */
  @Override
  public void giveBack(long loan, WireBuffer window) {
    if (claimOpen && loan == claimLoan && writeLock.isHeldByCurrentThread()) {
      claimOpen = false;
      sendRing.dropClaim();
      writeLock.unlock();
    }
  }

  /** Moves the payload of a DATA message into the shared-memory ring if it fits there (under the write lock). */
  private void toRing(ByteBuf msg) {
    int start = msg.readerIndex();
    int n = msg.readableBytes() - DataHeader.BYTES;
    if (n < SHARED_MIN_BYTES || msg.getByte(start + WireFormat.TYPE_OFFSET) != WireFormat.DATA) {
      return;
    }
    ByteBuffer payload = msg.internalNioBuffer(start + DataHeader.BYTES, n);
    long pos = sendRing.put(payload, payload.position(), n);
    if (pos < 0) {
      return;
    }
    msg.setLongLE(start + DataHeader.SHARED_POSITION_OFFSET, pos);
    msg.setIntLE(start + DataHeader.SHARED_LENGTH_OFFSET, n);
    msg.writerIndex(start + DataHeader.BYTES + DataHeader.SHARED_DESCRIPTOR_BYTES);
    msg.setByte(start + DataHeader.FLAGS_OFFSET, msg.getByte(start + DataHeader.FLAGS_OFFSET)
        | DataHeader.FLAG_SHARED_MEMORY);
    msg.setIntLE(start, DataHeader.BYTES + DataHeader.SHARED_DESCRIPTOR_BYTES - WireFormat.LENGTH_FIELD_BYTES);
  }

  private void writeSome(ByteBuf msg) throws IOException {
    ByteBuffer b = msg.internalNioBuffer(msg.readerIndex(), msg.readableBytes());
    int n = socket.write(b);
    if (n > 0) {
      msg.skipBytes(n);
      lastWriteNanos = io.clock().nanoTime();
    }
  }

  /** Writes what is queued, as far as the socket takes it (called by the driver when it is writable). */
  void flush() {
    IOException failed = null;
    writeLock.lock();
    try {
      try {
        while (!pending.isEmpty()) {
          ByteBuf m = pending.peekFirst();
          writeSome(m);
          if (m.isReadable()) {
            return;
          }
          pending.pollFirst().release();
        }
        if (writeInterest && !closed) {
          writeInterest = false;
          io.writesQueued(-1);
          key.interestOps(SelectionKey.OP_READ);
        }
        return;
      } catch (IOException | java.nio.channels.CancelledKeyException e) {
        failed = e instanceof IOException ? (IOException) e : new IOException(e.toString());
      }
    } finally {
      writeLock.unlock();
    }
    fail("write failed: " + failed);
  }

  void heartbeat() {
    try {
      write(ControlMessages.heartbeat(PooledByteBufAllocator.DEFAULT));
    } catch (PeerLostException e) {
      // Already reported as lost.
    }
  }

  // ------------------------------------------------------------------------------------------- reading

  /** Reads and dispatches what has arrived (driving thread only). */
  void readAvailable() {
    readAvailable(true);
  }

  /**
   * Reads what has arrived without being told by the poll that anything has (driving thread only): the thread
   * waiting for this connection's next frame tries it first, which spares the poll's system call when the frame
   * is there. Returns whether it read anything.
   */
  boolean tryRead() {
    return readAvailable(false);
  }

  /** Reads until a read comes back short; {@code polled}: the poll reported the socket ready. */
  private boolean readAvailable(boolean polled) {
    boolean read = false;
    String problem = null;
    synchronized (readLock) {
      if (closed) {
        return false;
      }
      try {
        for (int turn = 0; turn < READS_PER_TURN && problem == null; turn++) {
          int n = reader.readOnce();
          problem = reader.problem();
          if (problem != null) {
            io.breachLog().warn(RateLimitedLog.host(remoteKey), "{}: {} from {}; closing the connection",
                io.addressKey(), problem, remoteKey);
          } else if (n < 0) {
            problem = "connection closed";
          } else if (n == 0) {
            if (polled) {
              io.countEmptyRead();
            }
            break;
          } else {
            read = true;
            lastReadNanos = io.clock().nanoTime();
            if (reader.drained()) {
              // A short read: one more would cost a system call to learn that nothing is there.
              break;
            }
          }
        }
      } catch (IOException e) {
        problem = closed ? null : "read failed: " + e;
      }
      if (closed) {
        // Closed while a message was being delivered (its delivery failed the group, telling peers failed).
        reader.dropPartial();
      }
    }
    if (problem != null) {
      fail(problem);
    }
    return read;
  }

  /**
   * Delivers the records waiting in the peer's ring (driving thread only); closes the connection if the peer
   * broke the ring's rules. Cheap when there are none: one load of the ring's published word.
   */
  void readRing() {
    String problem;
    synchronized (readLock) {
      if (closed) {
        return;
      }
      problem = reader.drainRing();
      if (problem != null) {
        io.breachLog().warn(RateLimitedLog.host(remoteKey), "{}: {} from {}; closing the connection",
            io.addressKey(), problem, remoteKey);
      }
    }
    if (problem != null) {
      fail(problem);
    }
  }

  /** A waiting rank withdraws memory it offered for a payload this connection may be reading into it. */
  @Override
  public void reclaim(PostedReceive posted) {
    synchronized (readLock) {
      reader.reclaim(posted);
    }
  }

  /** Marks the peer's ring as watched by a thread blocked in a poll, or not; true if records wait already. */
  boolean parkRing(boolean parked) {
    synchronized (readLock) {
      return !closed && reader.parkRing(parked);
    }
  }

  // ------------------------------------------------------------------------------------------ closing

  /** Closes the connection and reports every peer behind it lost, once. */
  void fail(String why) {
    if (!shut()) {
      return;
    }
    LOG.debug("{}: connection to {} failed: {}", io.addressKey(), remoteKey, why);
    io.listener().lost(remoteKey, this, outbound, why);
  }

  @Override
  public void close() {
    if (shut()) {
      io.listener().lost(remoteKey, this, outbound, "connection closed");
    }
  }

  /** Closes the socket and frees queued and partly read messages; true for the call that did it. */
  private boolean shut() {
    writeLock.lock();
    try {
      if (closed) {
        return false;
      }
      closed = true;
      if (key != null) {
        key.cancel();
      }
      try {
        socket.close();
      } catch (IOException e) {
        LOG.debug("closing {}", remoteKey, e);
      }
      for (ByteBuf m; (m = pending.pollFirst()) != null; ) {
        m.release();
      }
      if (writeInterest) {
        writeInterest = false;
        io.writesQueued(-1);
      }
      if (sendRing != null) {
        sendRing.close();
        sendRing = null;
      }
    } finally {
      writeLock.unlock();
    }
    io.forget(this);
    // A reader still in the socket fails on the closed channel and leaves; then the partial frame is ours.
    synchronized (readLock) {
      reader.close();
    }
    return true;
  }

  @Override
  public String toString() {
    return "connection to " + remoteKey + (outbound ? " (outbound)" : " (inbound)");
  }
}
