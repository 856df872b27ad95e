package io.sparkcollective.core.transport.tcp.link;

import io.netty.buffer.ByteBuf;
import io.sparkcollective.core.auth.MessageAuthenticator;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;

/**
 * Tags on the messages of an authenticated connection that are not DATA (see {@link MessageAuthenticator}):
 * the sender appends the tag to the body and counts it in the length field; the reader checks and removes it
 * before the message is decoded.
 */
public final class MessageTags {
  private MessageTags() {}

  /**
   * Whether a message of {@code type} carries a tag: all that follow the handshake but DATA, whose payloads
   * the transport keeps as they are (see the transport's DATA settings).
   */
  public static boolean tagged(byte type) {
    return type != WireFormat.DATA && type < WireFormat.HELLO;
  }

  /** Appends the tag to {@code msg}, a whole message from its length field at the reader index. */
  public static void seal(ByteBuf msg, MessageAuthenticator outgoing) {
    int start = msg.readerIndex();
    byte type = msg.getByte(start + WireFormat.TYPE_OFFSET);
    int bodyStart = start + WireFormat.TYPE_OFFSET + 1;
    byte[] tag = new byte[MessageAuthenticator.TAG_BYTES];
    outgoing.tag(type, msg.nioBuffer(bodyStart, msg.writerIndex() - bodyStart), tag, 0);
    msg.writeBytes(tag);
    WireFormat.finish(msg, start);
  }

  /**
   * Checks the tag at the end of {@code in} (the body of a message of {@code type}, just past its type byte)
   * and removes it; returns why the connection must close, or null.
   */
  public static String open(byte type, ByteBuf in, MessageAuthenticator incoming) {
    int n = in.readableBytes() - MessageAuthenticator.TAG_BYTES;
    if (n < 0) {
      return "it sent a message of type " + type + " without its tag";
    }
    byte[] tag = new byte[MessageAuthenticator.TAG_BYTES];
    in.getBytes(in.readerIndex() + n, tag);
    if (!incoming.verify(type, in.nioBuffer(in.readerIndex(), n), tag, 0)) {
      return "it sent a message of type " + type + " whose tag does not match (forged, altered or replayed)";
    }
    in.writerIndex(in.readerIndex() + n);
    return null;
  }
}
