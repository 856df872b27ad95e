package io.sparkcollective.core.transport.tcp.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The messages other than DATA that ranks and connections exchange once a connection is authenticated: their
 * layouts, their writers and one decoder, so that each layout is written down exactly once. Integers are
 * little-endian; every message starts with the length field and type byte of {@link WireFormat}.
 *
 * <pre>
 *  ABORT       (2): group int64, source int32, dest int32, origin int32, reason (UTF-8, rest)
 *  LEAVE       (3): group int64, source int32, dest int32, copies int32 (connections it is sent over)
 *  JOIN        (4): group int64, source int32, dest int32, size int32
 *  REFUSE_JOIN (5): group int64, source int32, dest int32, reason (UTF-8, rest)
 *  HEARTBEAT   (6): empty
 *  SHM_OFFER   (7): token int64, capacity int32, ring file name (UTF-8, rest, at most 255 bytes)
 *  SHM_DECLINE (8): token int64 (of the offer declined)
 *  SHM_WAKE    (9): empty (records wait in the sender's ring: the receiver was blocked in a poll)
 * </pre>
 *
 * On an authenticated connection every one of them ends with a tag (see
 * {@link io.sparkcollective.core.auth.MessageSealer}), which the reader opens and removes first.
 *
 * Group messages name the group (a 64-bit id of its name), the sending rank and the rank they are for;
 * ABORT also names the rank whose failure it reports.
 */
public final class ControlMessages {
  /** Longest ring file name an offer may carry (a file name's limit on Linux). */
  public static final int MAX_RING_NAME_BYTES = 255;
  private static final int GROUP_HEADER_BYTES = Long.BYTES + 2 * Integer.BYTES;

  private ControlMessages() {}

  /** What a decoded group message is handed to (the connection's remote endpoint is {@code remoteKey}). */
  public interface Handler {
    void onJoin(String remoteKey, long group, int source, int dest, int size);

    void onJoinRefused(String remoteKey, long group, int source, int dest, String reason);

    void onAbort(String remoteKey, long group, int source, int dest, int origin, String reason);

    void onLeave(String remoteKey, long group, int source, int dest, int copies);
  }

  public static ByteBuf join(ByteBufAllocator alloc, long group, int source, int dest, int size) {
    ByteBuf out = start(alloc, WireFormat.JOIN, GROUP_HEADER_BYTES + Integer.BYTES);
    out.writeLongLE(group).writeIntLE(source).writeIntLE(dest).writeIntLE(size);
    return finish(out);
  }

  public static ByteBuf refuseJoin(ByteBufAllocator alloc, long group, int source, int dest, String reason) {
    ByteBuf out = start(alloc, WireFormat.REFUSE_JOIN, GROUP_HEADER_BYTES + 64);
    out.writeLongLE(group).writeIntLE(source).writeIntLE(dest);
    WireFormat.writeString(out, reason);
    return finish(out);
  }

  public static ByteBuf abort(ByteBufAllocator alloc, long group, int source, int dest, int origin, String reason) {
    ByteBuf out = start(alloc, WireFormat.ABORT, GROUP_HEADER_BYTES + Integer.BYTES + 64);
    out.writeLongLE(group).writeIntLE(source).writeIntLE(dest).writeIntLE(origin);
    WireFormat.writeString(out, reason);
    return finish(out);
  }

  /**
   * A rank's departure, sent over each of the {@code copies} connections that its frames to {@code dest} may have
   * taken: the receiver counts them, so that none overtakes frames still coming over another connection.
   */
  public static ByteBuf leave(ByteBufAllocator alloc, long group, int source, int dest, int copies) {
    ByteBuf out = start(alloc, WireFormat.LEAVE, GROUP_HEADER_BYTES + Integer.BYTES);
    out.writeLongLE(group).writeIntLE(source).writeIntLE(dest).writeIntLE(copies);
    return finish(out);
  }

  public static ByteBuf heartbeat(ByteBufAllocator alloc) {
    return finish(start(alloc, WireFormat.HEARTBEAT, 0));
  }

  public static ByteBuf sharedMemoryOffer(ByteBufAllocator alloc, long token, int capacity, String ringName) {
    byte[] name = ringName.getBytes(StandardCharsets.UTF_8);
    if (name.length > MAX_RING_NAME_BYTES) {
      throw new IllegalArgumentException("ring file name of " + name.length + " bytes: " + ringName);
    }
    ByteBuf out = start(alloc, WireFormat.SHM_OFFER, Long.BYTES + Integer.BYTES + name.length);
    out.writeLongLE(token).writeIntLE(capacity).writeBytes(name);
    return finish(out);
  }

  public static ByteBuf sharedMemoryDecline(ByteBufAllocator alloc, long token) {
    ByteBuf out = start(alloc, WireFormat.SHM_DECLINE, Long.BYTES);
    out.writeLongLE(token);
    return finish(out);
  }

  public static ByteBuf sharedMemoryWake(ByteBufAllocator alloc) {
    return finish(start(alloc, WireFormat.SHM_WAKE, 0));
  }

  /** A decoded SHM_OFFER. */
  public static final class RingOffer {
    public final long token;
    public final int capacity;
    public final String name;

    RingOffer(long token, int capacity, String name) {
      this.token = token;
      this.capacity = capacity;
      this.name = name;
    }
  }

  /**
   * The SHM_OFFER whose body (after the type byte, little-endian) is {@code body}, or null if it is malformed.
   */
  public static RingOffer readOffer(ByteBuffer body) {
    int fixed = Long.BYTES + Integer.BYTES;
    if (body.remaining() < fixed + 1 || body.remaining() > fixed + MAX_RING_NAME_BYTES) {
      return null;
    }
    long token = body.getLong(body.position());
    int capacity = body.getInt(body.position() + Long.BYTES);
    byte[] name = new byte[body.remaining() - fixed];
    body.get(body.position() + fixed, name);
    return new RingOffer(token, capacity, new String(name, StandardCharsets.UTF_8));
  }

  /**
   * Decodes the group message of type {@code type} ({@code in} just past its type byte) from {@code remoteKey}
   * and hands it to {@code handler}. Returns why the connection must close (a truncated message, a type this is
   * not the decoder for), else null. HEARTBEAT and the ring messages (SHM_OFFER, SHM_DECLINE, SHM_WAKE) are
   * accepted and ignored here: the connection's reader handles the ring messages itself.
   */
  public static String decode(String remoteKey, byte type, ByteBuf in, Handler handler) {
    try {
      switch (type) {
        case WireFormat.ABORT: {
          long group = in.readLongLE();
          int source = in.readIntLE();
          int dest = in.readIntLE();
          int origin = in.readIntLE();
          handler.onAbort(remoteKey, group, source, dest, origin, WireFormat.readString(in));
          return null;
        }
        case WireFormat.LEAVE:
          handler.onLeave(remoteKey, in.readLongLE(), in.readIntLE(), in.readIntLE(), in.readIntLE());
          return null;
        case WireFormat.JOIN:
          handler.onJoin(remoteKey, in.readLongLE(), in.readIntLE(), in.readIntLE(), in.readIntLE());
          return null;
        case WireFormat.REFUSE_JOIN: {
          long group = in.readLongLE();
          int source = in.readIntLE();
          int dest = in.readIntLE();
          handler.onJoinRefused(remoteKey, group, source, dest, WireFormat.readString(in));
          return null;
        }
        case WireFormat.HEARTBEAT:
        case WireFormat.SHM_OFFER:
        case WireFormat.SHM_DECLINE:
        case WireFormat.SHM_WAKE:
          return null;
        default:
          return "it sent an unknown message type " + type;
      }
    } catch (IndexOutOfBoundsException e) {
      return "it sent a truncated message of type " + type;
    }
  }

  private static ByteBuf start(ByteBufAllocator alloc, byte type, int bodyBytes) {
    ByteBuf out = alloc.buffer(WireFormat.LENGTH_FIELD_BYTES + 1 + bodyBytes);
    WireFormat.begin(out, type);
    return out;
  }

  private static ByteBuf finish(ByteBuf out) {
    WireFormat.finish(out, 0);
    return out;
  }
}
