package io.sparkcollective.core.auth;

import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import javax.crypto.Mac;
import javax.crypto.ShortBufferException;
import javax.crypto.spec.SecretKeySpec;

/**
 * Sealing by tag only: tag = the first {@link #TAG_BYTES} bytes of HMAC-SHA256(direction key, seq | type |
 * head | body), where seq (u64, little-endian) counts the sealed messages of this direction from 0. The body
 * stays in clear.
 */
public final class MessageAuthenticator implements MessageSealer {
  private final Mac mac;
  private final boolean coversData;
  private final byte[] full = new byte[32];
  private final byte[] counter = new byte[Long.BYTES];
  private long seq;

  /** Tags the messages of a direction with {@code directionKey}; DATA too if {@code coversData}. */
  public MessageAuthenticator(byte[] directionKey, boolean coversData) {
    this.coversData = coversData;
    try {
      this.mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(directionKey, "HmacSHA256"));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }

  @Override
  public boolean coversData() {
    return coversData;
  }

  @Override
  public void seal(byte type, ByteBuffer head, ByteBuffer message) {
    int tagAt = message.limit() - TAG_BYTES;
    compute(type, head, message, tagAt);
    for (int i = 0; i < TAG_BYTES; i++) {
      message.put(tagAt + i, full[i]);
    }
  }

  @Override
  public boolean open(byte type, ByteBuffer head, ByteBuffer sealed) {
    int tagAt = sealed.limit() - TAG_BYTES;
    if (tagAt < sealed.position()) {
      return false;
    }
    long before = seq;
    compute(type, head, sealed, tagAt);
    int diff = 0; // constant time: every byte is compared whatever the first difference
    for (int i = 0; i < TAG_BYTES; i++) {
      diff |= full[i] ^ sealed.get(tagAt + i);
    }
    if (diff != 0) {
      seq = before;
      return false;
    }
    return true;
  }

  @Override
  public long count() {
    return seq;
  }

  private void compute(byte type, ByteBuffer head, ByteBuffer body, int bodyEnd) {
    long s = seq++;
    for (int i = 0; i < Long.BYTES; i++) {
      counter[i] = (byte) (s >>> (8 * i));
    }
    mac.update(counter);
    mac.update(type);
    if (head != null) {
      int pos = head.position();
      mac.update(head);
      head.position(pos);
    }
    int pos = body.position();
    int limit = body.limit();
    body.limit(bodyEnd);
    mac.update(body);
    body.limit(limit).position(pos);
    try {
      mac.doFinal(full, 0);
    } catch (ShortBufferException e) {
      throw new IllegalStateException(e);
    }
  }
}
