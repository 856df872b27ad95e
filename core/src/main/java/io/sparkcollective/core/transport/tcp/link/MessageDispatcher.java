package io.sparkcollective.core.transport.tcp.link;

import io.netty.buffer.ByteBuf;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;

/**
 * The one place where a whole received message becomes a call on an {@link Inbound}, whoever read it:
 * Netty's pipeline, the caller-driven reader (for everything but the payloads it reads straight into frames)
 * and the endpoint for messages between ranks of one endpoint.
 */
public final class MessageDispatcher {
  private MessageDispatcher() {}

  /**
   * Hands one message of type {@code type} ({@code in} just past the type byte, the length field may be gone;
   * the caller keeps ownership) from {@code remoteKey} to {@code inbound}; {@code header} is the reading
   * side's DATA header view; {@code incoming} opens the connection's sealed messages (null between ranks of one
   * endpoint, whose messages never leave the process). Nothing of a sealed message is used before it opened.
   * Returns why the connection must be closed (unknown type, truncated or forged message), else null; the caller
   * logs it.
   */
  public static String dispatch(Inbound inbound, String remoteKey, byte type, ByteBuf in, DataHeader header,
      MessageSealer incoming) {
    if (incoming != null && MessageTags.sealed(type, incoming)) {
      String bad = MessageTags.open(type, in, incoming);
      if (bad != null) {
        return bad;
      }
    }
    if (type == WireFormat.DATA) {
      return data(inbound, remoteKey, in, header);
    }
    return ControlMessages.decode(remoteKey, type, in, inbound);
  }

  private static String data(Inbound inbound, String remoteKey, ByteBuf in, DataHeader header) {
    int start = in.readerIndex() - 1 - WireFormat.TYPE_OFFSET;
    if (start + DataHeader.BYTES > in.writerIndex()) {
      return "it sent a DATA message shorter than its header";
    }
    header.read(in, start);
    if (header.inSharedMemory()) {
      // Only a connection that mapped the sender's ring (caller-driven, which reads DATA itself) may get these.
      return "it sent a shared-memory frame on a connection without a ring";
    }
    Receiver r = inbound.receiver(remoteKey, header.group(), header.dest());
    if (r == null) {
      return null;
    }
    int n = in.writerIndex() - start - DataHeader.BYTES;
    Frame f = r.accept(remoteKey, header, n, false);
    if (f != null) {
      in.getBytes(start + DataHeader.BYTES, f.payload().view(n));
      in.readerIndex(in.writerIndex());
      r.complete(f, n, header.flags(), header.crc(), -1);
    }
    return null;
  }
}
