package io.sparkcollective.core.transport.tcp.link;

import io.netty.buffer.ByteBuf;
import io.sparkcollective.core.transport.Frame;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;

/**
 * One authenticated connection to another endpoint, whoever moves its bytes (Netty's pipeline or the
 * caller-driven I/O). What a link reads goes to an {@link Inbound}; that it opened or closed goes to a
 * {@link LinkListener}.
 */
public interface Link {
  /** Queues {@code msg} for sending (ownership passes here; it is released once written or on failure). */
  void write(ByteBuf msg);

  /**
   * Lends {@code frame} room for the payload of a DATA message, up to {@code payloadBytes} bytes after a header
   * of {@code headerBytes}, where the message is read from on the peer's side (its shared-memory ring), so the
   * payload is written there directly; true if it did. The link's other writes then wait until the claiming
   * thread {@link #publishClaimed publishes} the message or releases the frame (which drops the claim).
   */
  default boolean claim(Frame frame, int headerBytes, int payloadBytes) {
    return false;
  }

  /** Whether {@link #claim} may lend room now (a hint, read without the link's locks). */
  default boolean claims() {
    return false;
  }

  /**
   * The claimed message's memory, its writer index where the message starts: the caller writes the header
   * there, leaving the writer index at the message's end (the payload's, as the frame's size says).
   */
  default ByteBuf claimed() {
    throw new IllegalStateException("no message is claimed on " + this);
  }

  /**
   * Hands the peer the claimed message, as {@link #claimed} holds it; the frame is then released as usual.
   *
   * @throws io.sparkcollective.core.api.PeerLostException if the connection failed meanwhile
   */
  default void publishClaimed() {
    throw new IllegalStateException("no message is claimed on " + this);
  }

  /**
   * Sends a DATA message made of {@code header} (its readable bytes: the header alone) followed by the remaining
   * bytes of {@code payload}, memory the caller owns, read only during this call: what the socket does not take
   * at once is copied into memory of the link's own and sent from there. True if it did (ownership of
   * {@code header} passed here, also when this throws); false, with both untouched, where the link cannot (its
   * DATA goes through a shared-memory ring or is sealed, or writes wait in its queue): then send a whole message
   * with {@link #write}.
   *
   * @throws io.sparkcollective.core.api.PeerLostException if the connection is closed or the write failed
   */
  default boolean writeFrom(ByteBuf header, ByteBuffer payload) {
    return false;
  }

  /**
   * Whether messages may go both ways over this link: false where a shared-memory ring would carry its DATA in
   * one direction only (an outbound connection to an endpoint of this host), so each side sends over its own.
   */
  default boolean twoWay() {
    return true;
  }

  /** {@code local->remote}: the socket addresses of the connection's two ends (for logs and tests). */
  String ends();

  /** {@link #ends} of a connection between {@code local} and {@code remote}. */
  static String ends(SocketAddress local, SocketAddress remote) {
    return text(local) + "->" + text(remote);
  }

  private static String text(SocketAddress a) {
    if (a instanceof InetSocketAddress) {
      InetSocketAddress i = (InetSocketAddress) a;
      return i.getHostString() + ":" + i.getPort();
    }
    return String.valueOf(a);
  }

  boolean isActive();

  void close();
}
