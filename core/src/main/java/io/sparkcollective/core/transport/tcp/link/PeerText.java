package io.sparkcollective.core.transport.tcp.link;

/**
 * Text a peer sent (an advertised address, a refusal or abort reason) made safe to log or put in an error:
 * control characters (line breaks among them, which would forge log lines) become {@code \\uXXXX} escapes,
 * and anything past {@link #MAX_CHARS} is cut, with a note of how much was.
 */
public final class PeerText {
  /** Longest peer text kept in a log line or an error message. */
  public static final int MAX_CHARS = 1024;

  private PeerText() {}

  public static String escape(String s) {
    if (s == null) {
      return "null";
    }
    int n = Math.min(s.length(), MAX_CHARS);
    StringBuilder out = null;
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      boolean bad = Character.isISOControl(c) || c == '\u2028' || c == '\u2029'
          || Character.getType(c) == Character.FORMAT || Character.isSurrogate(c);
      if (bad && out == null) {
        out = new StringBuilder(n + 16).append(s, 0, i);
      }
      if (out != null) {
        if (bad) {
          out.append(String.format("\\u%04x", (int) c));
        } else {
          out.append(c);
        }
      }
    }
    String kept = out != null ? out.toString() : s.substring(0, n);
    return s.length() > n ? kept + "... (" + (s.length() - n) + " more characters)" : kept;
  }
}
