package io.sparkcollective.core.auth;

import java.nio.ByteBuffer;

/**
 * Seals the messages one direction of a connection sends after the handshake, or opens what it receives: a
 * {@link #TAG_BYTES}-byte tag follows each sealed message's body, under the direction's key and the count of
 * messages sealed before it in that direction, so a forged, altered, replayed, reordered or dropped message
 * fails to open and ends the connection. One instance per direction of one connection, used by one thread at
 * a time, in exactly the order the messages cross the socket.
 *
 * <p>A message is its type, a {@code head} that is authenticated but never encrypted (a DATA header, which
 * the reader needs to know where the payload goes before it has it; empty for other messages), and a body.
 */
public interface MessageSealer {
  /** Bytes of a tag: 128 bits. */
  int TAG_BYTES = 16;

  /** Whether DATA messages are sealed too (else only the others). */
  boolean coversData();

  /**
   * Seals the next message: {@code message} holds its body from position to {@code limit - TAG_BYTES} and room
   * for the tag after it; on return the body is as sent (encrypted, if this sealer encrypts) and the tag fills
   * the room. Positions of the buffers are left as they were.
   */
  void seal(byte type, ByteBuffer head, ByteBuffer message);

  /**
   * Opens the next message: {@code sealed} holds its body and tag (position to limit); on success the body is
   * in clear from position to {@code limit - TAG_BYTES} and true is returned. False means it was not the next
   * message this direction sealed under its key; the connection must close.
   */
  boolean open(byte type, ByteBuffer head, ByteBuffer sealed);

  /** Messages sealed or opened so far. */
  long count();
}
