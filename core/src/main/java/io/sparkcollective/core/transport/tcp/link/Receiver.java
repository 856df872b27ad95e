package io.sparkcollective.core.transport.tcp.link;

import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;

/**
 * Where one rank's DATA payloads are received: a link asks for the frame to read a payload into, reads it
 * (from its socket, its buffer or a shared-memory ring) and hands the frame back complete. Called by the
 * thread reading the connection.
 */
public interface Receiver {
  /**
   * The frame to receive the {@code payloadBytes} of the DATA message with header {@code h} into, its header
   * set from {@code h}; null if the message cannot be for this rank (the rank is failed then, and the payload
   * is to be skipped). With {@code lent} the frame has no payload memory of its own: the link lends it some.
   */
  Frame accept(DataHeader h, int payloadBytes, boolean lent);

  /** The frame from {@link #accept} holds its {@code payloadBytes} now: check ({@code flags}, {@code crc}), queue. */
  void complete(Frame f, int payloadBytes, int flags, int crc);
}
