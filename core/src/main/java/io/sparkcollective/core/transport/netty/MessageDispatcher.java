package io.sparkcollective.core.transport.netty;

import io.netty.buffer.ByteBuf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where a received message becomes a call on the endpoint's {@link GroupRegistry}, whoever
 * read it: Netty's pipeline ({@link MessageHandler}), the caller-driven reader ({@link DirectLink}, for
 * everything but the payloads it reads straight into frames) and {@link Connections} for messages between
 * ranks of one endpoint. Control message bodies are decoded here, by the layouts {@link WireFormat} draws.
 */
final class MessageDispatcher {
  private static final Logger LOG = LoggerFactory.getLogger(MessageDispatcher.class);

  private MessageDispatcher() {}

  /**
   * Hands one message of type {@code type} ({@code in} just past the type byte; the caller keeps ownership)
   * from {@code remoteKey} to the groups of endpoint {@code localKey}; {@code header} is the reading side's DATA
   * header view. Returns why the connection must be closed (unknown type, truncated message), else null.
   */
  static String dispatch(GroupRegistry groups, String localKey, String remoteKey, byte type, ByteBuf in,
      DataHeader header) {
    try {
      switch (type) {
        case WireFormat.DATA:
          groups.onData(remoteKey, in, header);
          return null;
        case WireFormat.ABORT: {
          long group = in.readLongLE();
          int source = in.readIntLE();
          int dest = in.readIntLE();
          int origin = in.readIntLE();
          groups.onAbort(group, source, dest, origin, WireFormat.readString(in));
          return null;
        }
        case WireFormat.LEAVE:
          groups.onLeave(in.readLongLE(), in.readIntLE(), in.readIntLE());
          return null;
        case WireFormat.JOIN:
          groups.onJoin(remoteKey, in.readLongLE(), in.readIntLE(), in.readIntLE(), in.readIntLE());
          return null;
        case WireFormat.REFUSE_JOIN: {
          long group = in.readLongLE();
          int source = in.readIntLE();
          int dest = in.readIntLE();
          groups.onJoinRefused(group, source, dest, WireFormat.readString(in));
          return null;
        }
        case WireFormat.HEARTBEAT:
          return null;
        case WireFormat.SHM_OFFER:
          // A connection Netty's threads read takes its payloads over the socket: not mapping the ring
          // leaves the sender sending them there.
          return null;
        default:
          LOG.warn("{}: unknown message type {} from {}; closing the connection", localKey, type,
              remoteKey);
          return "it sent an unknown message type " + type;
      }
    } catch (IndexOutOfBoundsException e) {
      LOG.warn("{}: truncated message from {}; closing the connection", localKey, remoteKey);
      return "it sent a truncated message";
    }
  }
}
