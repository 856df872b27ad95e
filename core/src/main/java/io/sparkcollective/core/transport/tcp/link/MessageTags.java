package io.sparkcollective.core.transport.tcp.link;

import io.netty.buffer.ByteBuf;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import java.nio.ByteBuffer;

/**
 * Seals on the messages of an authenticated connection (see {@link MessageSealer}): the sender seals the body
 * in place, appends the tag and counts it in the length field; the reader opens the message and drops the tag
 * before it is decoded. A DATA message's header is its head (authenticated, never encrypted); every other
 * message's body starts right after its type.
 */
public final class MessageTags {
  private MessageTags() {}

  /** Whether a message of {@code type} is sealed by {@code sealer}: all after the handshake, DATA if it covers it. */
  public static boolean sealed(byte type, MessageSealer sealer) {
    return type < WireFormat.HELLO && (type != WireFormat.DATA || sealer.coversData());
  }

  /** Where the body of a message of {@code type} starts, counted from its length field. */
  public static int bodyOffset(byte type) {
    return type == WireFormat.DATA ? DataHeader.BYTES : WireFormat.TYPE_OFFSET + 1;
  }

  /** Seals {@code msg}, a whole message from its length field at the reader index, in one buffer. */
  public static void seal(ByteBuf msg, MessageSealer outgoing) {
    int start = msg.readerIndex();
    byte type = msg.getByte(start + WireFormat.TYPE_OFFSET);
    int headStart = start + WireFormat.TYPE_OFFSET + 1;
    int bodyStart = start + bodyOffset(type);
    if (msg.writerIndex() < bodyStart) {
      throw new IllegalArgumentException("a message of type " + type + " shorter than its header");
    }
    msg.ensureWritable(MessageSealer.TAG_BYTES);
    msg.writerIndex(msg.writerIndex() + MessageSealer.TAG_BYTES);
    if (msg.nioBufferCount() != 1) {
      throw new IllegalArgumentException("a message to seal must be one piece of memory");
    }
    ByteBuffer head = msg.nioBuffer(headStart, bodyStart - headStart);
    outgoing.seal(type, head, msg.nioBuffer(bodyStart, msg.writerIndex() - bodyStart));
    WireFormat.finish(msg, start);
  }

  /**
   * Opens the message of {@code type} whose head and body are {@code in} (just past its type byte) and drops its
   * tag; returns why the connection must close, or null.
   */
  public static String open(byte type, ByteBuf in, MessageSealer incoming) {
    int headBytes = bodyOffset(type) - WireFormat.TYPE_OFFSET - 1;
    int n = in.readableBytes() - headBytes - MessageSealer.TAG_BYTES;
    if (n < 0) {
      return "it sent a message of type " + type + " without its seal";
    }
    int bodyStart = in.readerIndex() + headBytes;
    if (in.nioBufferCount() != 1 || !incoming.open(type, in.nioBuffer(in.readerIndex(), headBytes),
        in.nioBuffer(bodyStart, n + MessageSealer.TAG_BYTES))) {
      return "it sent a message of type " + type + " whose seal does not open (forged, altered, replayed or out "
          + "of order)";
    }
    in.writerIndex(bodyStart + n);
    return null;
  }
}
