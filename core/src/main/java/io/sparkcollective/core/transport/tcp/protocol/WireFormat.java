package io.sparkcollective.core.transport.tcp.protocol;

import io.sparkcollective.core.config.Tuning;
import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * The TCP wire format's framing and message types. Every message is length-prefixed; all integers are little-endian.
 *
 * <pre>
 *  every message:
 *   0        4      5
 *   +--------+------+------------------------------------------+
 *   | length | type | body (length - 1 bytes)                  |
 *   +--------+------+------------------------------------------+
 *     int32    int8   length counts type + body
 *
 *  DATA (type 1): the header drawn in {@link DataHeader}, then the payload
 *  types 2-9 (ABORT, LEAVE, JOIN, REFUSE_JOIN, HEARTBEAT, SHM_OFFER, SHM_DECLINE, SHM_WAKE): drawn in
 *  {@link ControlMessages}
 *  handshake types 16-20: see {@link io.sparkcollective.core.auth.SecretHandshake}
 * </pre>
 *
 * A frame names its group (a 64-bit id of the group's name, which includes the stage attempt), so frames
 * of another group or of an earlier attempt are dropped before they reach any user buffer.
 */
public final class WireFormat {
  private WireFormat() {}

  public static final int LENGTH_FIELD_BYTES = 4;
  /** Largest message accepted (a frame of the largest segment plus header, with room to spare). */
  public static final int MAX_MESSAGE_BYTES = Tuning.MAX_MESSAGE_BYTES;

  public static final byte DATA = 1;
  public static final byte ABORT = 2;
  public static final byte LEAVE = 3;
  public static final byte JOIN = 4;
  public static final byte REFUSE_JOIN = 5;
  public static final byte HEARTBEAT = 6;
  /** The sender's shared-memory ring for this connection's payloads: token, capacity, file name. */
  public static final byte SHM_OFFER = 7;
  /** The receiver will not map the offered ring (shared memory off, or it cannot): token. */
  public static final byte SHM_DECLINE = 8;
  /** Records wait in the sender's ring and the receiver was blocked in a poll: read them. Empty. */
  public static final byte SHM_WAKE = 9;
  public static final byte HELLO = 16;
  public static final byte CHALLENGE = 17;
  public static final byte RESPONSE = 18;
  public static final byte ACCEPT = 19;
  public static final byte REFUSE = 20;

  /** Where every message's type byte is: right after its length field. */
  public static final int TYPE_OFFSET = LENGTH_FIELD_BYTES;

  /** Starts a message: reserves the length field and writes the type. Finish with {@link #finish}. */
  public static void begin(ByteBuf out, byte type) {
    out.writeIntLE(0);
    out.writeByte(type);
  }

  /** Fills the length field of the message that starts at {@code start}. */
  public static void finish(ByteBuf out, int start) {
    out.setIntLE(start, out.writerIndex() - start - LENGTH_FIELD_BYTES);
  }

  public static void writeString(ByteBuf out, String s) {
    out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
  }

  /** The rest of {@code in} as UTF-8 text, at most 4 KiB of it. */
  public static String readString(ByteBuf in) {
    int n = Math.min(in.readableBytes(), 4096);
    String s = in.toString(in.readerIndex(), n, StandardCharsets.UTF_8);
    in.skipBytes(in.readableBytes());
    return s;
  }
}
