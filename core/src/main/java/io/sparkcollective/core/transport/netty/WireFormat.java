package io.sparkcollective.core.transport.netty;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The TCP wire format, in one place. Every message is length-prefixed; all integers are little-endian.
 *
 * <pre>
 *  every message:
 *   0        4      5
 *   +--------+------+------------------------------------------+
 *   | length | type | body (length - 1 bytes)                  |
 *   +--------+------+------------------------------------------+
 *     int32    int8   length counts type + body
 *
 *  DATA body (type 1), header 56 bytes then payload:
 *   5      6      7      8      9      10       12       16       20       24        32        40
 *   +------+------+------+------+------+--------+--------+--------+--------+---------+---------+
 *   | kind | dtype|  op  | algo | flags| stream | source | dest   | step   | group   | seq     |
 *   +------+------+------+------+------+--------+--------+--------+--------+---------+---------+
 *    int8   int8   int8   int8   int8   int16    int32    int32    int32    int64     int64
 *   40        48        56       60       64
 *   +---------+---------+--------+--------+------------------------------+
 *   | count   | offset  | root   | crc32c | payload (raw little-endian)  |
 *   +---------+---------+--------+--------+------------------------------+
 *    int64     int64     int32    int32    (flags bit 0: crc32c is set)
 *
 *  ABORT  (type 2): group int64, source int32, dest int32, origin int32, reason (UTF-8, rest)
 *  LEAVE  (type 3): group int64, source int32, dest int32
 *  JOIN   (type 4): group int64, source int32, dest int32, size int32
 *  REFUSE_JOIN (type 5): group int64, source int32, dest int32, reason (UTF-8, rest)
 *  HEARTBEAT (type 6): empty
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
  public static final int MAX_MESSAGE_BYTES = (64 << 20) + 4096;

  public static final byte DATA = 1;
  public static final byte ABORT = 2;
  public static final byte LEAVE = 3;
  public static final byte JOIN = 4;
  public static final byte REFUSE_JOIN = 5;
  public static final byte HEARTBEAT = 6;
  /** The sender's shared-memory ring for this connection's payloads: token, capacity, file name. */
  public static final byte SHM_OFFER = 7;
  public static final byte HELLO = 16;
  public static final byte CHALLENGE = 17;
  public static final byte RESPONSE = 18;
  public static final byte ACCEPT = 19;
  public static final byte REFUSE = 20;

  // DATA header offsets, from the start of the message (the length field).
  public static final int TYPE_OFFSET = 4;
  public static final int KIND_OFFSET = 5;
  public static final int DTYPE_OFFSET = 6;
  public static final int OP_OFFSET = 7;
  public static final int ALGORITHM_OFFSET = 8;
  public static final int FLAGS_OFFSET = 9;
  public static final int STREAM_OFFSET = 10;
  public static final int SOURCE_OFFSET = 12;
  public static final int DEST_OFFSET = 16;
  public static final int STEP_OFFSET = 20;
  public static final int GROUP_OFFSET = 24;
  public static final int SEQ_OFFSET = 32;
  public static final int COUNT_OFFSET = 40;
  public static final int ELEMENT_OFFSET_OFFSET = 48;
  public static final int ROOT_OFFSET = 56;
  public static final int CRC_OFFSET = 60;
  public static final int DATA_HEADER_BYTES = 64;

  public static final int FLAG_CRC32C = 1;
  /**
   * The payload is in the connection's shared-memory ring: the message ends after the header with its
   * position (8 bytes) and length (4 bytes) there instead of the payload.
   */
  public static final int FLAG_SHARED_MEMORY = 2;
  public static final int SHARED_DESCRIPTOR_BYTES = 12;

  /** Splits the byte stream into messages (length field stripped) and rejects any above the limit. */
  public static LengthFieldBasedFrameDecoder newDecoder() {
    return new LengthFieldBasedFrameDecoder(ByteOrder.LITTLE_ENDIAN, MAX_MESSAGE_BYTES, 0, LENGTH_FIELD_BYTES, 0,
        LENGTH_FIELD_BYTES, true) {
      @Override
      protected long getUnadjustedFrameLength(ByteBuf buf, int offset, int length, ByteOrder order) {
        // The base class reads through buf.order(LITTLE_ENDIAN), a new wrapper per message.
        return buf.getUnsignedIntLE(offset);
      }
    };
  }

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
