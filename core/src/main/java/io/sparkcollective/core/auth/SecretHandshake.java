package io.sparkcollective.core.auth;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mutual authentication of two endpoints that share a secret (in Spark, the per-application secret), bound to
 * who talks to whom. The secret never crosses the wire.
 *
 * <pre>
 *  dialler (client)                                          listener (server)
 *  HELLO     version u32, protection u8,
 *            nonceC 32 bytes,
 *            from: the dialler's own endpoint,
 *            to:   the endpoint it meant to dial      --&gt;    refuses another version or protection, or a
 *                                                            "to" that is not itself (a relay, a stale address)
 *                                                   &lt;--    CHALLENGE version u32, nonceS 32 bytes,
 *                                                            proofS = HMAC(k, "server" | T)
 *  refuses a proofS that does not match (the listener does not know the secret, or saw another HELLO)
 *  RESPONSE  proofC = HMAC(k, "client" | T)           --&gt;
 *                                                            refuses a proofC that does not match
 *                                                   &lt;--    ACCEPT, or REFUSE reason
 *
 *  T, the transcript: "spark-collective/3" | version | protection | nonceC | nonceS | len | from | len | to
 *                     (len: u16)
 *  session key   = HMAC(k, "session" | T); per direction: HMAC(session key, "dialler" or "listener")
 *  cipher key    (protection ENCRYPT) per direction: HMAC(direction key, "aes-256-gcm")
 * </pre>
 *
 * HMAC is HMAC-SHA256 and k the UTF-8 secret. Each side sees the other prove knowledge of k over the same
 * transcript, which holds both fresh nonces (no replay of a recorded exchange) and both identities: a relay
 * that forwards one endpoint's HELLO to another under a third's name fails, since the names it changes are
 * in the MACs, and so is the data protection both sides use (a downgrade fails like a relay). The role labels
 * keep one side's proof from being replayed as the other's. Every message after the handshake is sealed under
 * its direction's key ({@link #sealer}): tagged ({@link MessageAuthenticator}; DATA too with protection
 * AUTHENTICATE) or encrypted ({@link MessageCipher}, protection ENCRYPT).
 * Messages must come in exactly this order; anything else ends the handshake.
 */
public final class SecretHandshake {
  /**
   * Protocol version spoken by this build (5: a LEAVE counts the connections it is sent over, since small
   * operations take the connection a pair shares; 4: reductions' bfloat16 payloads in pairs of values).
   */
  public static final int VERSION = 5;
  public static final int NONCE_BYTES = 32;
  public static final int MAC_BYTES = 32;
  /** Longest endpoint name in a HELLO ({@code host:port}). */
  public static final int MAX_NAME_BYTES = 255;
  private static final byte[] LABEL = ("spark-collective/" + VERSION).getBytes(StandardCharsets.US_ASCII);

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

  /** The transcript T of one exchange (see the class comment). */
  public static byte[] transcript(int version, DataProtection protection, byte[] clientNonce, byte[] serverNonce,
      String from, String to) {
    byte[] f = from.getBytes(StandardCharsets.UTF_8);
    byte[] t = to.getBytes(StandardCharsets.UTF_8);
    if (f.length > MAX_NAME_BYTES || t.length > MAX_NAME_BYTES) {
      throw new IllegalArgumentException("endpoint names longer than " + MAX_NAME_BYTES + " bytes");
    }
    return ByteBuffer.allocate(LABEL.length + Integer.BYTES + 1 + clientNonce.length + serverNonce.length
        + 2 * Short.BYTES + f.length + t.length).order(ByteOrder.LITTLE_ENDIAN)
        .put(LABEL).putInt(version).put(protection.wireCode()).put(clientNonce).put(serverNonce)
        .putShort((short) f.length).put(f).putShort((short) t.length).put(t).array();
  }

  /** The listener's proof over {@code transcript}. */
  public byte[] serverProof(byte[] transcript) {
    return mac(key, "server", transcript);
  }

  /** The dialler's proof over {@code transcript}. */
  public byte[] clientProof(byte[] transcript) {
    return mac(key, "client", transcript);
  }

  /** The key of the messages the dialler ({@code fromDialler}) or the listener sends after this exchange. */
  public byte[] directionKey(byte[] transcript, boolean fromDialler) {
    return mac(mac(key, "session", transcript), fromDialler ? "dialler" : "listener", new byte[0]);
  }

  /**
   * The sealer of the messages the dialler ({@code fromDialler}) or the listener sends after the exchange with
   * {@code transcript}, for {@code protection}: the sending side seals with it, the receiving side opens.
   */
  public MessageSealer sealer(byte[] transcript, boolean fromDialler, DataProtection protection) {
    byte[] direction = directionKey(transcript, fromDialler);
    if (protection == DataProtection.ENCRYPT) {
      return new MessageCipher(mac(direction, "aes-256-gcm", new byte[0]));
    }
    return new MessageAuthenticator(direction, protection == DataProtection.AUTHENTICATE);
  }

  /** Constant-time comparison. */
  public static boolean matches(byte[] expected, byte[] actual) {
    return MessageDigest.isEqual(expected, actual);
  }

  private static byte[] mac(byte[] key, String label, byte[] data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      mac.update(label.getBytes(StandardCharsets.US_ASCII));
      mac.update(data);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }
}
