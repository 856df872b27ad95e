package io.sparkcollective.core.auth;

import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import javax.crypto.Mac;
import javax.crypto.ShortBufferException;
import javax.crypto.spec.SecretKeySpec;

/**
 * The tags of the messages one direction of a connection carries after the handshake: tag = the first
 * {@link #TAG_BYTES} bytes of HMAC-SHA256(direction key, seq | type | body), where seq (u64, little-endian)
 * counts the tagged messages of this direction from 0. A tag that does not match (a forged, altered,
 * replayed, reordered or dropped message) ends the connection. One instance per direction of one
 * connection, used by one thread at a time (the writer under its lock, or the reader).
 */
public final class MessageAuthenticator {
  /** Bytes of a tag: 128 bits, as in AES-GCM and the usual truncations of HMAC-SHA256. */
  public static final int TAG_BYTES = 16;

  private final Mac mac;
  private final byte[] full = new byte[32];
  private final byte[] counter = new byte[Long.BYTES];
  private long seq;

  public MessageAuthenticator(byte[] directionKey) {
    try {
      this.mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(directionKey, "HmacSHA256"));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }

  /** Computes the next message's tag over {@code type} and {@code body} (position to limit, left) into {@code out}. */
  public void tag(byte type, ByteBuffer body, byte[] out, int offset) {
    compute(type, body);
    System.arraycopy(full, 0, out, offset, TAG_BYTES);
  }

  /**
   * Whether {@code tag} (at {@code offset}) is the next message's tag over {@code type} and {@code body}; a
   * mismatch leaves the count where it was, but the connection is to be closed anyway.
   */
  public boolean verify(byte type, ByteBuffer body, byte[] tag, int offset) {
    long before = seq;
    compute(type, body);
    int diff = 0; // constant time: every byte is compared whatever the first difference
    for (int i = 0; i < TAG_BYTES; i++) {
      diff |= full[i] ^ tag[offset + i];
    }
    if (diff != 0) {
      seq = before;
      return false;
    }
    return true;
  }

  /** Messages tagged or verified so far. */
  public long count() {
    return seq;
  }

  private void compute(byte type, ByteBuffer body) {
    long s = seq++;
    for (int i = 0; i < Long.BYTES; i++) {
      counter[i] = (byte) (s >>> (8 * i));
    }
    mac.update(counter);
    mac.update(type);
    int pos = body.position();
    mac.update(body);
    body.position(pos);
    try {
      mac.doFinal(full, 0);
    } catch (ShortBufferException e) {
      throw new IllegalStateException(e);
    }
  }
}
