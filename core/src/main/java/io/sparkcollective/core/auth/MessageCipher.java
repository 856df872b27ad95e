package io.sparkcollective.core.auth;

import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Sealing by AES-256-GCM: the body is encrypted in place, type and head are additional authenticated data,
 * and the nonce is 0 (u32) | seq (u64, big-endian), seq counting the sealed messages of this direction from 0:
 * never repeated under one key, since every direction of every connection has a key of its own (derived from
 * the handshake's transcript). The tag is GCM's 128-bit tag.
 */
public final class MessageCipher implements MessageSealer {
  private static final int NONCE_BYTES = 12;
  private final Cipher cipher;
  private final SecretKeySpec key;
  private final byte[] nonce = new byte[NONCE_BYTES];
  private final byte[] typeByte = new byte[1];
  private long seq;

  /** Encrypts (or decrypts) the messages of a direction with {@code key} (32 bytes). */
  public MessageCipher(byte[] key) {
    if (key.length != 32) {
      throw new IllegalArgumentException("an AES-256 key has 32 bytes, not " + key.length);
    }
    this.key = new SecretKeySpec(key, "AES");
    try {
      this.cipher = Cipher.getInstance("AES/GCM/NoPadding");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES/GCM unavailable", e);
    }
  }

  @Override
  public boolean coversData() {
    return true;
  }

  @Override
  public void seal(byte type, ByteBuffer head, ByteBuffer message) {
    int pos = message.position();
    int limit = message.limit();
    try {
      start(Cipher.ENCRYPT_MODE, type, head);
      // In place (input and output at the same position): the JDK neither copies nor buffers the body.
      ByteBuffer in = message.duplicate().limit(limit - TAG_BYTES);
      ByteBuffer out = message.duplicate();
      cipher.doFinal(in, out);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES-GCM failed to seal a message of type " + type, e);
    }
    message.limit(limit).position(pos);
  }

  @Override
  public boolean open(byte type, ByteBuffer head, ByteBuffer sealed) {
    if (sealed.remaining() < TAG_BYTES) {
      return false;
    }
    long before = seq;
    try {
      start(Cipher.DECRYPT_MODE, type, head);
      // One call with body and tag together: the JDK checks the tag before it writes any clear text.
      cipher.doFinal(sealed.duplicate(), sealed.duplicate());
      return true;
    } catch (AEADBadTagException e) {
      seq = before;
      return false;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES-GCM failed to open a message of type " + type, e);
    }
  }

  @Override
  public long count() {
    return seq;
  }

  private void start(int mode, byte type, ByteBuffer head) throws GeneralSecurityException {
    long s = seq++;
    for (int i = 0; i < Long.BYTES; i++) {
      nonce[NONCE_BYTES - 1 - i] = (byte) (s >>> (8 * i));
    }
    cipher.init(mode, key, new GCMParameterSpec(TAG_BYTES * 8, nonce));
    typeByte[0] = type;
    cipher.updateAAD(typeByte);
    if (head != null && head.hasRemaining()) {
      cipher.updateAAD(head.duplicate());
    }
  }
}
