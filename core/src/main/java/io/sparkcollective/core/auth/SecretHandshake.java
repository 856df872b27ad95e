package io.sparkcollective.core.auth;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mutual challenge-response authentication of two endpoints that share a secret (in Spark, the
 * per-application secret the driver plugin hands to executors). The secret never crosses the wire.
 *
 * <pre>
 *  client (dialling endpoint)                              server (listening endpoint)
 *  HELLO     version int32, nonceC 16 bytes,
 *            advertised address (UTF-8)          --&gt;
 *                                                &lt;--      CHALLENGE version int32, nonceS 16 bytes,
 *                                                          macS = HMAC(k, "server" | nonceC | nonceS)
 *  checks macS (else: the server does not know the secret; close)
 *  RESPONSE  macC = HMAC(k, "client" | nonceS | nonceC) --&gt;
 *                                                &lt;--      ACCEPT, or REFUSE reason (UTF-8)
 * </pre>
 *
 * HMAC is HMAC-SHA256; k is the UTF-8 secret. The role labels keep one side's MAC from being replayed as
 * the other's; fresh nonces on both sides keep a recorded exchange from being replayed. A server refuses
 * a wrong protocol version (naming both versions) and a wrong MAC, and logs the refusal; no group traffic
 * is accepted on a connection before ACCEPT. Integrity and secrecy of the traffic after the handshake
 * come from TLS when it is enabled.
 */
public final class SecretHandshake {
  /** Protocol version spoken by this build. */
  public static final int VERSION = 1;
  public static final int NONCE_BYTES = 16;
  public static final int MAC_BYTES = 32;

  private static final SecureRandom RANDOM = new SecureRandom();
  private final byte[] key;

  public SecretHandshake(String secret) {
    if (secret == null || secret.isEmpty()) {
      throw new IllegalArgumentException("the shared secret must not be empty");
    }
    this.key = secret.getBytes(StandardCharsets.UTF_8);
  }

  public static byte[] nonce() {
    byte[] n = new byte[NONCE_BYTES];
    RANDOM.nextBytes(n);
    return n;
  }

  /** The server's proof: HMAC(k, "server" | nonceC | nonceS). */
  public byte[] serverMac(byte[] clientNonce, byte[] serverNonce) {
    return mac("server", clientNonce, serverNonce);
  }

  /** The client's proof: HMAC(k, "client" | nonceS | nonceC). */
  public byte[] clientMac(byte[] serverNonce, byte[] clientNonce) {
    return mac("client", serverNonce, clientNonce);
  }

  /** Constant-time comparison. */
  public static boolean matches(byte[] expected, byte[] actual) {
    return MessageDigest.isEqual(expected, actual);
  }

  private byte[] mac(String role, byte[] first, byte[] second) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      mac.update(role.getBytes(StandardCharsets.US_ASCII));
      mac.update(first);
      mac.update(second);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }
}
