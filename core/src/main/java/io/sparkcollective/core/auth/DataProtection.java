package io.sparkcollective.core.auth;

import java.util.Locale;

/**
 * What the messages of an authenticated connection carry besides their bytes (setting
 * {@code transport.dataProtection}). Both ends of a connection must use the same; the handshake binds it, so
 * a connection between endpoints that differ is refused, naming both.
 */
public enum DataProtection {
  /** Control messages carry an HMAC-SHA256 tag; DATA travels as it is (the default; use TLS to encrypt). */
  NONE,
  /** Every message, DATA included, carries an HMAC-SHA256 tag: nothing forged, altered, replayed or dropped. */
  AUTHENTICATE,
  /** Every message is encrypted and authenticated with AES-256-GCM. */
  ENCRYPT;

  /** The code of this mode in the handshake. */
  public byte wireCode() {
    return (byte) ordinal();
  }

  /** The mode of {@code code}, or null. */
  public static DataProtection ofWireCode(int code) {
    return code >= 0 && code < values().length ? values()[code] : null;
  }

  /** The mode named {@code name} (any case), or null. */
  public static DataProtection parse(String name) {
    for (DataProtection p : values()) {
      if (p.name().equalsIgnoreCase(name.trim())) {
        return p;
      }
    }
    return null;
  }

  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }
}
