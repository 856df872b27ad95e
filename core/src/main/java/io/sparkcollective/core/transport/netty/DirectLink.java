package io.sparkcollective.core.transport.netty;

import io.sparkcollective.core.config.Tuning;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.transport.Frame;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An authenticated plain TCP connection whose bytes application threads move ({@link CallerDrivenIo}).
 *
 * <p>Writing: any thread, under the write lock, writes straight to the non-blocking socket; what the socket
 * does not take is queued and flushed by whoever drives when the socket becomes writable. A message is
 * released once written (a frame's message returns the frame to its pool).
 *
 * <p>Reading: only the driving thread, under the read lock. Messages are parsed out of a staging buffer; a
 * DATA payload that is not in it yet is read straight into the frame it will be delivered in, so large
 * segments are copied once, from the socket into the frame.
 *
 * <p>Same host: an outbound connection to an endpoint of this host offers a {@link SharedMemoryRing}; once
 * the receiver has mapped it, payloads of at least {@link #SHARED_MIN_BYTES} are written into the ring and
 * only their headers cross the socket (no kernel copies, no TCP processing for the bulk of the bytes).
 *
 * <p>Lock order: the read lock may be held while writing (a frame's delivery can fail the group, which tells
 * the peers); the write lock is never held while taking the read lock.
 */
final class DirectLink implements Link {
  private static final Logger LOG = LoggerFactory.getLogger(DirectLink.class);
  private static final int STAGING_BYTES = Tuning.STAGING_BYTES;
  /** Reads per call before the driver moves on to other connections. */
  private static final int READS_PER_TURN = Tuning.READS_PER_TURN;
  /** Smallest payload sent through a shared-memory ring; smaller ones are as cheap over the socket. */
  static final int SHARED_MIN_BYTES = Tuning.SHARED_MIN_BYTES;

  private final CallerDrivenIo io;
  private final NettyEndpoint endpoint;
  private final SocketChannel socket;
  private final String remoteKey;
  private final boolean outbound;
  private final Object readLock = new Object();
  private final Object writeLock = new Object();
  private final ArrayDeque<ByteBuf> pending = new ArrayDeque<>();
  private final ByteBuffer staging = ByteBuffer.allocateDirect(STAGING_BYTES).order(ByteOrder.LITTLE_ENDIAN);
  /** The header of the DATA message being read (reading thread only, under the read lock). */
  private final DataHeader header = new DataHeader();
  private SelectionKey key;
  private boolean writeInterest;
  private volatile boolean closed;
  private volatile long lastReadNanos;
  private volatile long lastWriteNanos;

  // A DATA payload being read into its frame (or skipped: frame == null).
  private TcpTransport bodyFor;
  private Frame body;
  private ByteBuffer bodyView;
  private int bodyBytes;
  private int bodyRemaining;
  private int bodyFlags;
  private int bodyCrc;

  /** This side's ring for what it sends (guarded by the write lock), and the peer's (by the read lock). */
  private SharedMemoryRing sendRing;
  private SharedMemoryRing recvRing;

  DirectLink(CallerDrivenIo io, SocketChannel socket, String remoteKey, boolean outbound) throws IOException {
    this.io = io;
    this.endpoint = io.endpoint();
    this.socket = socket;
    this.remoteKey = remoteKey;
    this.outbound = outbound;
    socket.configureBlocking(false);
    long now = io.clock().nanoTime();
    this.lastReadNanos = now;
    this.lastWriteNanos = now;
  }

  void register(Selector selector) throws IOException {
    synchronized (writeLock) {
      key = socket.register(selector, SelectionKey.OP_READ, this);
    }
  }

  /** Offers the peer a shared-memory ring for this connection's payloads if it runs on this host. */
  void offerSharedMemory() {
    int capacity = endpoint.config().sharedMemoryBytes();
    Path dir = endpoint.config().sharedMemoryDir();
    if (!outbound || capacity == 0 || !Files.isDirectory(dir) || !remoteOnThisHost()) {
      return;
    }
    SharedMemoryRing ring;
    try {
      ring = SharedMemoryRing.create(dir, capacity);
    } catch (IOException | RuntimeException e) {
      LOG.info("{}: no shared-memory ring for the connection to {} ({}); payloads go over the socket",
          endpoint.addressKey(), remoteKey, e.toString());
      return;
    }
    ByteBuf out = PooledByteBufAllocator.DEFAULT.buffer();
    WireFormat.begin(out, WireFormat.SHM_OFFER);
    out.writeLongLE(ring.token()).writeIntLE(capacity);
    WireFormat.writeString(out, ring.path().getFileName().toString());
    WireFormat.finish(out, 0);
    synchronized (writeLock) {
      if (closed) {
        ring.close();
        out.release();
        return;
      }
      sendRing = ring;
    }
    try {
      write(out);
    } catch (PeerLostException e) {
      // Closed meanwhile; shut() deleted the ring.
    }
  }

  private boolean remoteOnThisHost() {
    try {
      InetAddress a = ((InetSocketAddress) socket.getRemoteAddress()).getAddress();
      return a.isLoopbackAddress() || NetworkInterface.getByInetAddress(a) != null;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  String remoteKey() {
    return remoteKey;
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
    IOException failed = null;
    synchronized (writeLock) {
      if (closed) {
        msg.release();
        throw new PeerLostException(-1, "the connection to endpoint " + remoteKey + " is closed");
      }
      try {
        if (sendRing != null) {
          toRing(msg);
        }
        if (pending.isEmpty()) {
          writeSome(msg);
          if (!msg.isReadable()) {
            msg.release();
            return;
          }
        }
        pending.addLast(msg);
        if (!writeInterest) {
          writeInterest = true;
          key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
          io.writeInterestChanged();
        }
        return;
      } catch (IOException e) {
        failed = e;
        msg.release();
      }
    }
    fail("write failed: " + failed);
    throw new PeerLostException(-1, "cannot write to endpoint " + remoteKey + ": " + failed);
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
    msg.setIntLE(start, DataHeader.BYTES + DataHeader.SHARED_DESCRIPTOR_BYTES
        - WireFormat.LENGTH_FIELD_BYTES);
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
    synchronized (writeLock) {
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
          key.interestOps(SelectionKey.OP_READ);
        }
        return;
      } catch (IOException | java.nio.channels.CancelledKeyException e) {
        failed = e instanceof IOException ? (IOException) e : new IOException(e.toString());
      }
    }
    fail("write failed: " + failed);
  }

  void heartbeat() {
    ByteBuf out = PooledByteBufAllocator.DEFAULT.buffer(WireFormat.LENGTH_FIELD_BYTES + 1);
    WireFormat.begin(out, WireFormat.HEARTBEAT);
    WireFormat.finish(out, 0);
    try {
      write(out);
    } catch (PeerLostException e) {
      // Already reported as lost.
    }
  }

  // ------------------------------------------------------------------------------------------- reading

  /** Reads and dispatches what has arrived (driving thread only). */
  void readAvailable() {
    String problem = null;
    synchronized (readLock) {
      if (closed) {
        return;
      }
      try {
        for (int turn = 0; turn < READS_PER_TURN && problem == null; turn++) {
          int n;
          if (bodyRemaining > 0) {
            n = body != null ? socket.read(bodyView) : skip();
            if (n > 0) {
              bodyRemaining -= n;
              if (bodyRemaining == 0) {
                finishBody();
              }
            }
          } else {
            n = socket.read(staging);
            if (n > 0) {
              problem = parse();
              if (problem != null) {
                LOG.warn("{}: {} from {}; closing the connection", endpoint.addressKey(), problem, remoteKey);
              }
            }
          }
          if (n < 0) {
            problem = "connection closed";
          } else if (n == 0) {
            break;
          } else {
            lastReadNanos = io.clock().nanoTime();
          }
        }
      } catch (IOException e) {
        problem = closed ? null : "read failed: " + e;
      }
      if (closed && body != null) {
        // Closed while this message was being delivered (its delivery failed the group, telling peers failed).
        endpoint.pool().release(body);
        body = null;
        bodyFor = null;
        bodyView = null;
      }
    }
    if (problem != null) {
      fail(problem);
    }
  }

  /** Reads and drops payload bytes of a frame that no rank here takes. */
  private int skip() throws IOException {
    staging.clear().limit(Math.min(staging.capacity(), bodyRemaining));
    int n = socket.read(staging);
    staging.clear();
    return n;
  }

  /** Dispatches the complete messages in the staging buffer; returns why the connection must close, or null. */
  private String parse() {
    ByteBuffer in = staging;
    in.flip();
    try {
      while (in.remaining() >= WireFormat.LENGTH_FIELD_BYTES + 1) {
        int start = in.position();
        long length = in.getInt(start) & 0xFFFFFFFFL;
        if (length < 1 || length > WireFormat.MAX_MESSAGE_BYTES) {
          return "it sent a message of " + length + " bytes (limit " + WireFormat.MAX_MESSAGE_BYTES + ")";
        }
        byte type = in.get(start + WireFormat.TYPE_OFFSET);
        if (type == WireFormat.DATA) {
          if (length + WireFormat.LENGTH_FIELD_BYTES < DataHeader.BYTES) {
            return "it sent a truncated message";
          }
          if (in.remaining() < DataHeader.BYTES) {
            break;
          }
          if ((in.get(start + DataHeader.FLAGS_OFFSET) & DataHeader.FLAG_SHARED_MEMORY) != 0) {
            if (length + WireFormat.LENGTH_FIELD_BYTES != DataHeader.BYTES
                + DataHeader.SHARED_DESCRIPTOR_BYTES) {
              return "it sent a shared-memory frame of " + length + " bytes";
            }
            if (in.remaining() < DataHeader.BYTES + DataHeader.SHARED_DESCRIPTOR_BYTES) {
              break;
            }
            String bad = sharedData(in, start);
            if (bad != null) {
              return bad;
            }
            continue;
          }
          startData(in, start, (int) (length + WireFormat.LENGTH_FIELD_BYTES - DataHeader.BYTES));
          if (bodyRemaining > 0) {
            // The rest of the payload comes straight from the socket.
            break;
          }
        } else {
          if (length + WireFormat.LENGTH_FIELD_BYTES > in.capacity()) {
            return "it sent a control message of " + length + " bytes";
          }
          if (in.remaining() < length + WireFormat.LENGTH_FIELD_BYTES) {
            break;
          }
          ByteBuffer slice = in.duplicate().position(start + WireFormat.TYPE_OFFSET + 1)
              .limit(start + WireFormat.LENGTH_FIELD_BYTES + (int) length).slice();
          in.position(start + WireFormat.LENGTH_FIELD_BYTES + (int) length);
          String bad = type == WireFormat.SHM_OFFER ? attachRing(slice.order(ByteOrder.LITTLE_ENDIAN))
              : MessageDispatcher.dispatch(endpoint.registry(), endpoint.addressKey(), remoteKey, type,
                  Unpooled.wrappedBuffer(slice), header);
          if (bad != null) {
            return bad;
          }
        }
      }
      return null;
    } finally {
      in.compact();
    }
  }

  /** A DATA message starts at {@code start}; its header is in the staging buffer, its payload has {@code n} bytes. */
  private void startData(ByteBuffer in, int start, int n) {
    beginBody(in, start, n, false);
    in.position(start + DataHeader.BYTES);
    int here = Math.min(n, in.remaining());
    if (body != null) {
      bodyView.put(bodyView.position(), in, in.position(), here);
      bodyView.position(here);
    }
    in.position(in.position() + here);
    bodyRemaining = n - here;
    if (bodyRemaining == 0) {
      finishBody();
    }
  }

  /**
   * A DATA message whose payload is in the shared-memory ring: the frame gets the payload where it lies (the
   * ring frees its space when the frame is released).
   */
  private String sharedData(ByteBuffer in, int start) {
    if (recvRing == null) {
      return "it sent a shared-memory frame without a ring";
    }
    long pos = in.getLong(start + DataHeader.SHARED_POSITION_OFFSET);
    int n = in.getInt(start + DataHeader.SHARED_LENGTH_OFFSET);
    String bad = recvRing.check(pos, n);
    if (bad != null) {
      return bad;
    }
    beginBody(in, start, n, true);
    recvRing.take(pos, n, body);
    in.position(start + DataHeader.BYTES + DataHeader.SHARED_DESCRIPTOR_BYTES);
    io.countShared();
    finishBody();
    return null;
  }

  /**
   * Finds the frame the payload of the DATA message at {@code start} goes into (none: it is skipped); with
   * {@code lent} a frame without payload memory of its own.
   */
  private void beginBody(ByteBuffer in, int start, int n, boolean lent) {
    DataHeader h = header.read(in, start);
    TcpTransport t = endpoint.registry().rankFor(remoteKey, h.group, h.dest);
    Frame f = t != null ? t.acceptData(h, n, lent) : null;
    bodyFor = f != null ? t : null;
    body = f;
    bodyBytes = n;
    bodyFlags = h.flags;
    bodyCrc = h.crc;
    bodyView = f != null && !lent ? f.payload().view(n) : null;
  }

  /** The peer's SHM_OFFER: maps its ring if this endpoint takes payloads that way (else they keep coming inline). */
  private String attachRing(ByteBuffer offer) {
    int fixed = Long.BYTES + Integer.BYTES; // token, capacity; then the file name (at most 255 bytes)
    if (offer.remaining() < fixed || offer.remaining() > fixed + 255) {
      return "it sent a malformed ring offer";
    }
    if (recvRing != null) {
      return "it offered a second ring";
    }
    long token = offer.getLong();
    int capacity = offer.getInt();
    byte[] name = new byte[offer.remaining()];
    offer.get(name);
    if (endpoint.config().sharedMemoryBytes() == 0) {
      return null;
    }
    try {
      recvRing = SharedMemoryRing.attach(endpoint.config().sharedMemoryDir(), new String(name,
          StandardCharsets.UTF_8), token, capacity);
      LOG.info("{}: payloads from {} come through shared memory ({} bytes)", endpoint.addressKey(), remoteKey,
          capacity);
    } catch (IOException | RuntimeException e) {
      LOG.info("{}: cannot map the shared-memory ring of {} ({}); its payloads go over the socket",
          endpoint.addressKey(), remoteKey, e.toString());
    }
    return null;
  }

  private void finishBody() {
    Frame f = body;
    TcpTransport t = bodyFor;
    body = null;
    bodyFor = null;
    bodyView = null;
    if (f != null) {
      t.completeData(f, bodyBytes, bodyFlags, bodyCrc);
    }
  }

  // ------------------------------------------------------------------------------------------ closing

  /** Closes the connection and reports every peer behind it lost, once. */
  void fail(String why) {
    if (!shut()) {
      return;
    }
    LOG.debug("{}: connection to {} failed: {}", endpoint.addressKey(), remoteKey, why);
    endpoint.connectionLost(remoteKey, this, outbound, why);
  }

  @Override
  public void close() {
    if (shut()) {
      endpoint.connectionLost(remoteKey, this, outbound, "connection closed");
    }
  }

  /** Closes the socket and frees queued and partly read messages; true for the call that did it. */
  private boolean shut() {
    synchronized (writeLock) {
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
      if (sendRing != null) {
        sendRing.close();
        sendRing = null;
      }
    }
    io.forget(this);
    // A reader still in the socket fails on the closed channel and leaves; then the partial frame is ours.
    synchronized (readLock) {
      if (body != null) {
        endpoint.pool().release(body);
        body = null;
        bodyFor = null;
        bodyView = null;
      }
      bodyRemaining = 0;
      if (recvRing != null) {
        recvRing.close();
        recvRing = null;
      }
    }
    return true;
  }

  @Override
  public String toString() {
    return "connection to " + remoteKey + (outbound ? " (outbound)" : " (inbound)");
  }
}
