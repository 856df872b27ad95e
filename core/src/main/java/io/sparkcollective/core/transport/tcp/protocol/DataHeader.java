package io.sparkcollective.core.transport.tcp.protocol;

import io.netty.buffer.ByteBuf;
import io.sparkcollective.core.transport.Frame;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The header of a DATA message, the one place its layout is defined: each field's offset follows from the
 * one before, the writer and both readers (Netty's buffers on event-loop connections, the NIO staging
 * buffer of caller-driven ones) are here, and so is the text a header prints as. Offsets count from the
 * start of the message, its length field; integers are little-endian.
 *
 * <pre>
 *   0        4      5      6      7      8      9       10       12       16       20
 *   +--------+------+------+------+------+------+--------+--------+--------+--------+
 *   | length | type | kind | dtype|  op  | algo | flags  | stream | source | dest   |
 *   +--------+------+------+------+------+------+--------+--------+--------+--------+
 *     int32    int8   int8   int8   int8   int8   int8     int16    int32    int32
 *   20       24        32        40        48        56       60       64
 *   +--------+---------+---------+---------+---------+--------+--------+------------------------+
 *   | step   | group   | seq     | count   | offset  | root   | crc32c | payload, or (flags bit |
 *   +--------+---------+---------+---------+---------+--------+--------+ 1) its place in the    |
 *     int32    int64     int64     int64     int64     int32    int32    shared-memory ring      |
 * </pre>
 *
 * <p>A reader is a reusable view: {@link #read(ByteBuf, int)} or {@link #read(ByteBuffer, int)} fills its
 * fields from one message (one reader per connection, used by the thread reading it), so a header is
 * decoded without allocating.
 */
public final class DataHeader {
  public static final int LENGTH_OFFSET = 0;
  public static final int TYPE_OFFSET = WireFormat.TYPE_OFFSET;
  public static final int KIND_OFFSET = TYPE_OFFSET + Byte.BYTES;
  public static final int DTYPE_OFFSET = KIND_OFFSET + Byte.BYTES;
  public static final int OP_OFFSET = DTYPE_OFFSET + Byte.BYTES;
  public static final int ALGORITHM_OFFSET = OP_OFFSET + Byte.BYTES;
  public static final int FLAGS_OFFSET = ALGORITHM_OFFSET + Byte.BYTES;
  public static final int STREAM_OFFSET = FLAGS_OFFSET + Byte.BYTES;
  public static final int SOURCE_OFFSET = STREAM_OFFSET + Short.BYTES;
  public static final int DEST_OFFSET = SOURCE_OFFSET + Integer.BYTES;
  public static final int STEP_OFFSET = DEST_OFFSET + Integer.BYTES;
  public static final int GROUP_OFFSET = STEP_OFFSET + Integer.BYTES;
  public static final int SEQ_OFFSET = GROUP_OFFSET + Long.BYTES;
  public static final int COUNT_OFFSET = SEQ_OFFSET + Long.BYTES;
  public static final int ELEMENT_OFFSET_OFFSET = COUNT_OFFSET + Long.BYTES;
  public static final int ROOT_OFFSET = ELEMENT_OFFSET_OFFSET + Long.BYTES;
  public static final int CRC_OFFSET = ROOT_OFFSET + Integer.BYTES;
  /** Bytes from the start of the message to its payload. */
  public static final int BYTES = CRC_OFFSET + Integer.BYTES;

  public static final int FLAG_CRC32C = 1;
  /** The payload is in the connection's shared-memory ring; the message ends with its place there. */
  public static final int FLAG_SHARED_MEMORY = 2;
  /** What follows the header of a shared-memory DATA message: the payload's position and length in the ring. */
  public static final int SHARED_POSITION_OFFSET = BYTES;
  public static final int SHARED_LENGTH_OFFSET = SHARED_POSITION_OFFSET + Long.BYTES;
  public static final int SHARED_DESCRIPTOR_BYTES = SHARED_LENGTH_OFFSET + Integer.BYTES - BYTES;

  private int kind;
  private int dtype;
  private int op;
  private int algorithm;
  private int flags;
  private int stream;
  private int source;
  private int dest;
  private int step;
  private long group;
  private long seq;
  private long count;
  private long offset;
  private int root;
  private int crc;

  /**
   * Writes the header of {@code f} (from {@code source} to {@code dest} of {@code group}) at the writer index of
   * {@code out}, for a payload of {@code payloadBytes} that follows it, and leaves the writer index after the
   * payload.
   */
  public static void write(ByteBuf out, Frame f, int source, int dest, long group, int flags, int crc,
      int payloadBytes) {
    int start = out.writerIndex();
    writeHeader(out, f, source, dest, group, flags, crc, payloadBytes);
    out.writerIndex(start + BYTES + payloadBytes);
  }

  /**
   * {@link #write} for a payload that travels in a buffer of its own (a gathering write): leaves the writer index
   * right after the header.
   */
  public static void writeHeader(ByteBuf out, Frame f, int source, int dest, long group, int flags, int crc,
      int payloadBytes) {
    int start = out.writerIndex();
    out.setIntLE(start + LENGTH_OFFSET, BYTES - WireFormat.LENGTH_FIELD_BYTES + payloadBytes);
    out.setByte(start + TYPE_OFFSET, WireFormat.DATA);
    out.setByte(start + KIND_OFFSET, f.kind());
    out.setByte(start + DTYPE_OFFSET, f.dtype());
    out.setByte(start + OP_OFFSET, f.op());
    out.setByte(start + ALGORITHM_OFFSET, f.algorithm());
    out.setByte(start + FLAGS_OFFSET, flags);
    out.setShortLE(start + STREAM_OFFSET, f.stream());
    out.setIntLE(start + SOURCE_OFFSET, source);
    out.setIntLE(start + DEST_OFFSET, dest);
    out.setIntLE(start + STEP_OFFSET, f.step());
    out.setLongLE(start + GROUP_OFFSET, group);
    out.setLongLE(start + SEQ_OFFSET, f.seq());
    out.setLongLE(start + COUNT_OFFSET, f.count());
    out.setLongLE(start + ELEMENT_OFFSET_OFFSET, f.offset());
    out.setIntLE(start + ROOT_OFFSET, f.root());
    out.setIntLE(start + CRC_OFFSET, crc);
    out.writerIndex(start + BYTES);
  }

  /** Fills this view from the DATA message that starts at {@code start} of {@code in}; returns it. */
  public DataHeader read(ByteBuf in, int start) {
    kind = in.getUnsignedByte(start + KIND_OFFSET);
    dtype = in.getUnsignedByte(start + DTYPE_OFFSET);
    op = in.getUnsignedByte(start + OP_OFFSET);
    algorithm = in.getUnsignedByte(start + ALGORITHM_OFFSET);
    flags = in.getUnsignedByte(start + FLAGS_OFFSET);
    stream = in.getUnsignedShortLE(start + STREAM_OFFSET);
    source = in.getIntLE(start + SOURCE_OFFSET);
    dest = in.getIntLE(start + DEST_OFFSET);
    step = in.getIntLE(start + STEP_OFFSET);
    group = in.getLongLE(start + GROUP_OFFSET);
    seq = in.getLongLE(start + SEQ_OFFSET);
    count = in.getLongLE(start + COUNT_OFFSET);
    offset = in.getLongLE(start + ELEMENT_OFFSET_OFFSET);
    root = in.getIntLE(start + ROOT_OFFSET);
    crc = in.getIntLE(start + CRC_OFFSET);
    return this;
  }

  /** As {@link #read(ByteBuf, int)}, from a little-endian NIO buffer. */
  public DataHeader read(ByteBuffer in, int start) {
    if (in.order() != ByteOrder.LITTLE_ENDIAN) {
      throw new IllegalArgumentException("the wire is little-endian; the buffer reads " + in.order());
    }
    kind = in.get(start + KIND_OFFSET) & 0xFF;
    dtype = in.get(start + DTYPE_OFFSET) & 0xFF;
    op = in.get(start + OP_OFFSET) & 0xFF;
    algorithm = in.get(start + ALGORITHM_OFFSET) & 0xFF;
    flags = in.get(start + FLAGS_OFFSET) & 0xFF;
    stream = in.getShort(start + STREAM_OFFSET) & 0xFFFF;
    source = in.getInt(start + SOURCE_OFFSET);
    dest = in.getInt(start + DEST_OFFSET);
    step = in.getInt(start + STEP_OFFSET);
    group = in.getLong(start + GROUP_OFFSET);
    seq = in.getLong(start + SEQ_OFFSET);
    count = in.getLong(start + COUNT_OFFSET);
    offset = in.getLong(start + ELEMENT_OFFSET_OFFSET);
    root = in.getInt(start + ROOT_OFFSET);
    crc = in.getInt(start + CRC_OFFSET);
    return this;
  }

  /** Sets {@code f}'s header to this one's (the frame then describes the call it came from). */
  public void copyTo(Frame f) {
    f.header(kind, stream, seq, step, source, dtype, op, root, algorithm, count, offset);
  }

  public int kind() {
    return kind;
  }

  public int dtype() {
    return dtype;
  }

  public int op() {
    return op;
  }

  public int algorithm() {
    return algorithm;
  }

  /** {@link #FLAG_CRC32C}, {@link #FLAG_SHARED_MEMORY}. */
  public int flags() {
    return flags;
  }

  public int stream() {
    return stream;
  }

  /** The sending rank. */
  public int source() {
    return source;
  }

  /** The rank the frame is for. */
  public int dest() {
    return dest;
  }

  public int step() {
    return step;
  }

  /** The 64-bit id of the group's name. */
  public long group() {
    return group;
  }

  public long seq() {
    return seq;
  }

  public long count() {
    return count;
  }

  /** The element offset of the segment in the operation's vector. */
  public long offset() {
    return offset;
  }

  public int root() {
    return root;
  }

  /** The payload's CRC32C when {@link #FLAG_CRC32C} is set. */
  public int crc() {
    return crc;
  }

  /** Whether the payload is in the connection's shared-memory ring rather than after the header. */
  public boolean inSharedMemory() {
    return (flags & FLAG_SHARED_MEMORY) != 0;
  }

  @Override
  public String toString() {
    return "DATA{group=" + Long.toHexString(group) + " " + source + "->" + dest + " kind=" + kind + " dtype=" + dtype
        + " op=" + op + " algo=" + algorithm + " flags=" + flags + " stream=" + stream + " seq=" + seq + " step="
        + step + " count=" + count + " offset=" + offset + " root=" + root + "}";
  }
}
