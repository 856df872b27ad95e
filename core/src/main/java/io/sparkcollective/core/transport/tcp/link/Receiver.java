package io.sparkcollective.core.transport.tcp.link;

import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.PostedReceive;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;

/**
 * Where one rank's DATA payloads are received: a link asks for the frame to read a payload into, reads it
 * (from its socket, its buffer or a shared-memory ring) and hands the frame back complete. Called by the
 * thread reading the connection.
 */
public interface Receiver {
  /**
   * The frame to receive the {@code payloadBytes} of the DATA message with header {@code h}, read from the
   * connection authenticated as endpoint {@code remoteKey}, into, its header set from {@code h}; null if the
   * payload is to be skipped (a frame this rank does not take: it claims a sender that is not at
   * {@code remoteKey}, or it breaks the group's limits, which fails the group). With {@code lent} the frame has
   * no payload memory of its own: the link lends it some.
   */
  Frame accept(String remoteKey, DataHeader h, int payloadBytes, boolean lent);

  /**
   * {@link #accept} for a payload that {@code reader} reads from a socket into the frame's memory, whichever it
   * is: the frame may be lent memory a waiting rank offered for it ({@link PostedReceive}), which the reader gives
   * up when that rank {@link PostedReceive.Reader#reclaim reclaims} it.
   */
  default Frame accept(String remoteKey, DataHeader h, int payloadBytes, PostedReceive.Reader reader) {
    return accept(remoteKey, h, payloadBytes, false);
  }

  /**
   * The frame from {@link #accept} holds its {@code payloadBytes} now: check ({@code flags}, {@code crc}), queue.
   * {@code receiveNanos} is how long the payload took to arrive from its first byte, or negative if the link
   * does not know (a lent or shared-memory payload, or a whole message read at once).
   */
  void complete(Frame f, int payloadBytes, int flags, int crc, long receiveNanos);

  /**
   * The DATA of rank {@code source} came through {@code link} (called after {@link #accept} took a frame): a hint
   * for the thread that waits for that rank's next frame, which can read that connection first.
   */
  default void arrivedThrough(int source, Link link) {
  }
}
