package io.sparkcollective.core.transport.tcp.direct;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.PostedReceive;
import io.sparkcollective.core.transport.tcp.link.MessageDispatcher;
import io.sparkcollective.core.transport.tcp.link.MessageTags;
import io.sparkcollective.core.transport.tcp.link.PeerText;
import io.sparkcollective.core.transport.tcp.link.Receiver;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import io.sparkcollective.core.transport.tcp.shm.SharedMemoryRing;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The read side of one caller-driven connection: messages are parsed out of a staging buffer; a DATA payload
 * that is not in it yet is read straight into the frame it will be delivered in, so large segments are copied
 * once, from the socket into the frame; a payload in the sender's shared-memory ring is lent to its frame
 * where it lies, and so is a whole DATA message the sender put there as a record. Used by one thread at a time,
 * under its link's read lock.
 *
 * <p>With DATA sealed, a payload and its tag are read into the frame together (its tailroom takes the tag) and
 * opened there before the frame is handed on; one that no rank here takes is read into a pooled frame and
 * opened all the same, so a message whose header was altered to have it dropped is caught like any other.
 */
final class DirectReader implements SharedMemoryRing.RecordSink {
  private static final Logger LOG = LoggerFactory.getLogger(DirectReader.class);

  private final DirectLink owner;
  private final CallerDrivenIo io;
  private final SocketChannel socket;
  private final String remoteKey;
  /** Opens every sealed message. */
  private final MessageSealer incoming;
  /** Whether DATA messages are sealed (then each ends with a tag). */
  private final boolean sealsData;
  private final int dataTagBytes;
  /** The head of the sealed DATA message being read (its header past the type), kept for opening it. */
  private final ByteBuffer dataHead =
      ByteBuffer.allocate(DataHeader.BYTES - WireFormat.TYPE_OFFSET - 1).order(ByteOrder.LITTLE_ENDIAN);
  private final ByteBuffer staging = ByteBuffer.allocateDirect(Tuning.STAGING_BYTES).order(ByteOrder.LITTLE_ENDIAN);
  /** The header of the DATA message being read. */
  private final DataHeader header = new DataHeader();
  /** The sender's ring, once its offer is mapped. */
  private SharedMemoryRing ring;
  /** Why the connection must close after the last {@link #readOnce}, or null. */
  private String problem;
  /** DATA messages read from the socket (their payloads in it or in the ring), told to the sender's ring. */
  private long socketData;
  /** The last {@link #readOnce} took less than it had room for: the socket held no more at that moment. */
  private boolean drained;

  // A DATA payload being read into its frame (or skipped: frame == null).
  private Receiver bodyFor;
  private Frame body;
  /** The frame is read only to be opened (no rank here takes it). */
  private boolean bodyDropped;
  private ByteBuffer bodyView;
  private int bodyBytes;
  private int bodyRemaining;
  private int bodyFlags;
  private int bodyCrc;
  /** When the payload's first byte was seen (reading the socket), or -1 for one that is not read from it. */
  private long bodyStartNanos;

  DirectReader(DirectLink owner, CallerDrivenIo io, SocketChannel socket, String remoteKey,
      MessageSealer incoming) {
    this.owner = owner;
    this.io = io;
    this.socket = socket;
    this.remoteKey = remoteKey;
    this.incoming = incoming;
    this.sealsData = incoming.coversData();
    this.dataTagBytes = sealsData ? MessageSealer.TAG_BYTES : 0;
  }

  /**
   * Reads once from the socket and handles what came: returns the bytes read (0: nothing there, -1: the peer
   * closed); {@link #problem} says afterwards whether the peer broke the protocol.
   */
  int readOnce() throws IOException {
    problem = null;
    if (bodyRemaining > 0) {
      int n = body != null ? read(bodyView) : skip();
      if (n > 0) {
        bodyRemaining -= n;
        if (bodyRemaining == 0) {
          problem = finishBody();
        }
      }
      return n;
    }
    int n = read(staging);
    if (n > 0) {
      problem = parse();
    }
    return n;
  }

  /**
   * Whether the last {@link #readOnce} found the socket emptied: it read fewer bytes than it had room for, so
   * reading again now would most likely find nothing (the socket's readiness, level-triggered, brings whatever
   * comes later).
   */
  boolean drained() {
    return drained;
  }

  /** Why the connection must close after the last {@link #readOnce}, or null. */
  String problem() {
    return problem;
  }

  /** Reads once into {@code into}; notes whether the read left room in it, i.e. emptied the socket. */
  private int read(ByteBuffer into) throws IOException {
    int room = into.remaining();
    int n = socket.read(into);
    drained = n < room;
    return n;
  }

  /** Reads and drops payload bytes of a frame that no rank here takes. */
  private int skip() throws IOException {
    staging.clear().limit(Math.min(staging.capacity(), bodyRemaining));
    int n = read(staging);
    staging.clear();
    return n;
  }

  /** Dispatches the complete messages in the staging buffer; returns why the connection must close, or null. */
  private String parse() {
    ByteBuffer in = staging;
    in.flip();
    try {
      // Records written before what came over the socket are published: they go first.
      String early = drainRing();
      if (early != null) {
        return early;
      }
      while (in.remaining() >= WireFormat.LENGTH_FIELD_BYTES + 1) {
        int start = in.position();
        long length = in.getInt(start) & 0xFFFFFFFFL;
        if (length < 1 || length > WireFormat.MAX_MESSAGE_BYTES) {
          return "it sent a message of " + length + " bytes (limit " + WireFormat.MAX_MESSAGE_BYTES + ")";
        }
        int whole = (int) (length + WireFormat.LENGTH_FIELD_BYTES);
        byte type = in.get(start + WireFormat.TYPE_OFFSET);
        if (type == WireFormat.DATA) {
          if (whole < DataHeader.BYTES + dataTagBytes) {
            return "it sent a truncated DATA message";
          }
          if (in.remaining() < DataHeader.BYTES) {
            break;
          }
          if ((in.get(start + DataHeader.FLAGS_OFFSET) & DataHeader.FLAG_SHARED_MEMORY) != 0) {
            if (whole != DataHeader.BYTES + DataHeader.SHARED_DESCRIPTOR_BYTES + dataTagBytes) {
              return "it sent a shared-memory frame of " + length + " bytes";
            }
            if (in.remaining() < whole) {
              break;
            }
            String bad = sharedData(in, start, whole);
            if (bad != null) {
              return bad;
            }
            continue;
          }
          String bad = startData(in, start, whole - DataHeader.BYTES - dataTagBytes);
          if (bad != null) {
            return bad;
          }
          if (bodyRemaining > 0) {
            // The rest of the payload comes straight from the socket.
            break;
          }
        } else {
          if (whole > in.capacity()) {
            return "it sent a control message of " + length + " bytes";
          }
          if (in.remaining() < whole) {
            break;
          }
          ByteBuffer slice = in.duplicate().position(start + WireFormat.TYPE_OFFSET + 1).limit(start + whole).slice()
              .order(ByteOrder.LITTLE_ENDIAN);
          in.position(start + whole);
          ByteBuf body = Unpooled.wrappedBuffer(slice);
          boolean ring = type == WireFormat.SHM_OFFER || type == WireFormat.SHM_DECLINE
              || type == WireFormat.SHM_WAKE;
          String bad = !ring ? MessageDispatcher.dispatch(io.inbound(), remoteKey, type, body, header, incoming)
              : MessageTags.open(type, body, incoming);
          if (bad == null && type == WireFormat.SHM_OFFER) {
            bad = attachRing(body.nioBuffer().order(ByteOrder.LITTLE_ENDIAN));
          } else if (bad == null && type == WireFormat.SHM_WAKE) {
            // Its records were read before this message (parse reads the ring first).
            io.countWakeup();
          } else if (bad == null && type == WireFormat.SHM_DECLINE) {
            bad = body.readableBytes() == Long.BYTES ? owner.ringDeclined(body.getLongLE(body.readerIndex()))
                : "it sent a malformed ring decline";
          }
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

  /**
   * A DATA message starts at {@code start}; its header is in the staging buffer, its payload has {@code n} bytes
   * (then its tag, if sealed). Returns why the connection must close, or null.
   */
  private String startData(ByteBuffer in, int start, int n) {
    String bad = beginBody(in, start, n, false);
    if (bad != null) {
      return bad;
    }
    in.position(start + DataHeader.BYTES);
    int total = n + dataTagBytes;
    int here = Math.min(total, in.remaining());
    if (body != null) {
      bodyView.put(bodyView.position(), in, in.position(), here);
      bodyView.position(bodyView.position() + here);
    }
    in.position(in.position() + here);
    bodyRemaining = total - here;
    return bodyRemaining == 0 ? finishBody() : null;
  }

  /**
   * A DATA message whose payload is in the shared-memory ring: the frame gets the payload where it lies (the
   * ring frees its space when the frame is released).
   */
  private String sharedData(ByteBuffer in, int start, int whole) {
    if (ring == null) {
      return "it sent a shared-memory frame without a ring";
    }
    if (sealsData && !incoming.open(WireFormat.DATA, head(in, start),
        in.duplicate().position(start + DataHeader.BYTES).limit(start + whole))) {
      return sealBroken();
    }
    long pos = in.getLong(start + DataHeader.SHARED_POSITION_OFFSET);
    int n = in.getInt(start + DataHeader.SHARED_LENGTH_OFFSET);
    String bad = ring.check(pos, n);
    if (bad != null) {
      return bad;
    }
    beginBody(in, start, n, true);
    ring.take(pos, n, body);
    in.position(start + whole);
    io.countShared();
    return finishBody();
  }

  /**
   * Delivers the DATA records waiting in the sender's ring (a connection without sealed DATA). Returns why the
   * connection must close, or null.
   */
  String drainRing() {
    return ring == null || sealsData || !ring.hasRecords() ? null : ring.pollRecords(this);
  }

  /** Marks the sender's ring as polled by a blocked thread or not; true if records wait already. */
  boolean parkRing(boolean parked) {
    return ring != null && !sealsData && ring.park(parked);
  }

  /** A whole DATA message from the sender's ring: its payload is lent to its frame where it lies. */
  @Override
  public String record(SharedMemoryRing from, ByteBuffer in, int offset, int whole, long pos) {
    if (in.get(offset + WireFormat.TYPE_OFFSET) != WireFormat.DATA) {
      return "it sent a shared-memory record of type " + in.get(offset + WireFormat.TYPE_OFFSET)
          + ", not a DATA message";
    }
    if (whole < DataHeader.BYTES) {
      return "it sent a shared-memory DATA record of " + whole + " bytes, shorter than its header";
    }
    DataHeader h = header.read(in, offset);
    if (h.inSharedMemory()) {
      return "it sent a shared-memory record that points into the ring";
    }
    int n = whole - DataHeader.BYTES;
    int flags = h.flags();
    int crc = h.crc();
    Receiver r = io.inbound().receiver(remoteKey, h.group(), h.dest());
    Frame f = r != null ? r.accept(remoteKey, h, n, true) : null;
    from.takeRecord(pos, whole, DataHeader.BYTES, f);
    io.countShared();
    if (f != null) {
      r.complete(f, n, flags, crc, -1);
    }
    return null;
  }

  /** The head of the DATA message at {@code start} of {@code in}: its header past the type byte. */
  private static ByteBuffer head(ByteBuffer in, int start) {
    return in.duplicate().position(start + WireFormat.TYPE_OFFSET + 1).limit(start + DataHeader.BYTES);
  }

  private static String sealBroken() {
    return "it sent a DATA message whose seal does not open (forged, altered, replayed or out of order)";
  }

  /**
   * Finds the frame the payload of the DATA message at {@code start} goes into (none: it is skipped, or with
   * DATA sealed read into a pooled frame only to be opened); with {@code lent} a frame without payload memory
   * of its own. Returns why the connection must close, or null.
   */
  private String beginBody(ByteBuffer in, int start, int n, boolean lent) {
    DataHeader h = header.read(in, start);
    Receiver r = io.inbound().receiver(remoteKey, h.group(), h.dest());
    // A payload read from the socket may go straight into memory the waiting rank offered (not a sealed one: its
    // tag is read with it, into the frame's tailroom).
    Frame f = r == null ? null : lent || sealsData ? r.accept(remoteKey, h, n, lent) : r.accept(remoteKey, h, n, owner);
    if (f != null) {
      r.arrivedThrough(h.source(), owner);
      if (f.lender() instanceof PostedReceive) {
        io.countReadIntoPosted();
      }
    }
    bodyFor = f != null ? r : null;
    bodyDropped = false;
    if (f == null && sealsData && !lent) {
      if (n > io.pool().maxCapacity()) {
        return "it sent a DATA payload of " + n + " bytes, more than the largest segment " + io.pool().maxCapacity();
      }
      f = io.pool().acquire(n);
      bodyDropped = true;
    }
    body = f;
    bodyBytes = n;
    bodyFlags = h.flags();
    bodyCrc = h.crc();
    bodyStartNanos = lent ? -1 : System.nanoTime();
    if (sealsData && !lent) {
      dataHead.clear().put(0, in, start + WireFormat.TYPE_OFFSET + 1, dataHead.capacity());
    }
    bodyView = f == null || lent ? null : sealsData ? f.payload().viewWithTail(n, dataTagBytes) : f.payload().view(n);
    return null;
  }

  /** The payload is in: opens it if sealed, then hands the frame on. Returns why the connection must close, or null. */
  private String finishBody() {
    socketData++;
    if (ring != null && !sealsData) {
      ring.socketDataRead(socketData);
    }
    Frame f = body;
    Receiver r = bodyFor;
    ByteBuffer view = bodyView;
    boolean dropped = bodyDropped;
    body = null;
    bodyFor = null;
    bodyView = null;
    bodyDropped = false;
    if (f == null) {
      return null;
    }
    if (sealsData && view != null) {
      view.position(view.limit() - bodyBytes - dataTagBytes);
      if (!incoming.open(WireFormat.DATA, dataHead.clear(), view)) {
        io.pool().release(f);
        return sealBroken();
      }
    }
    if (dropped) {
      io.pool().release(f);
    } else {
      r.complete(f, bodyBytes, bodyFlags, bodyCrc, bodyStartNanos < 0 ? -1 : System.nanoTime() - bodyStartNanos);
    }
    return null;
  }

  /** The peer's SHM_OFFER: maps its ring if this endpoint takes payloads that way (else they keep coming inline). */
  private String attachRing(ByteBuffer body) {
    ControlMessages.RingOffer offer = ControlMessages.readOffer(body);
    if (offer == null) {
      return "it sent a malformed ring offer";
    }
    if (ring != null) {
      return "it offered a second ring";
    }
    if (io.config().sharedMemoryBytes() > 0) {
      try {
        ring = SharedMemoryRing.attach(io.config().sharedMemoryDir(), offer.name, offer.token, offer.capacity,
            socketData);
        if (!sealsData) {
          io.ringAttached(owner);
        }
        LOG.info("{}: payloads from {} come through shared memory ({} bytes)", io.addressKey(), remoteKey,
            offer.capacity);
        return null;
      } catch (IOException | RuntimeException e) {
        LOG.info("{}: cannot map the shared-memory ring of {} ({}); its payloads go over the socket",
            io.addressKey(), remoteKey, PeerText.escape(e.toString()));
      }
    }
    // Declined: the sender deletes its file at once instead of keeping it for the connection's life.
    owner.write(ControlMessages.sharedMemoryDecline(PooledByteBufAllocator.DEFAULT, offer.token));
    return null;
  }

  /** The connection closed: frees a partly read frame and the ring's mapping. */
  void close() {
    if (body != null) {
      io.pool().release(body);
      body = null;
      bodyFor = null;
      bodyView = null;
      bodyDropped = false;
    }
    bodyRemaining = 0;
    if (ring != null) {
      ring.close();
      ring = null;
      io.ringClosed(owner);
    }
  }

  /**
   * The rank that offered {@code posted} withdraws it: a payload still being read there moves, with what was read
   * of it so far, into a pooled frame, where the rest is read (under the read lock).
   */
  void reclaim(PostedReceive posted) {
    Frame lent = body;
    if (lent == null || lent.lender() != posted) {
      return;
    }
    Frame own = io.pool().acquire(bodyBytes);
    own.header(lent.kind(), lent.stream(), lent.seq(), lent.step(), lent.source(), lent.dtype(), lent.op(),
        lent.root(), lent.algorithm(), lent.count(), lent.offset());
    int start = lent.payload().start();
    int read = bodyView.position() - start;
    ByteBuffer to = own.payload().view(bodyBytes);
    to.put(0, bodyView, start, read).position(read);
    io.pool().release(lent);
    body = own;
    bodyView = to;
    io.countReclaimed();
  }

  /** Frees a frame whose delivery closed the connection mid-way (its group failed and told its peers). */
  void dropPartial() {
    if (body != null) {
      io.pool().release(body);
      body = null;
      bodyFor = null;
      bodyView = null;
    }
  }
}
