package io.sparkcollective.core.transport.tcp.link;

/** Hears of an endpoint's links coming and going (the endpoint's connection table). */
public interface LinkListener {
  /** {@code link} to {@code remoteKey} is authenticated and ready for messages. */
  void opened(Link link, String remoteKey);

  /**
   * {@code link} is a connection {@code remoteKey} dialled to this endpoint, and none of its messages has been
   * handed on yet. Messages may go back over it once {@code remoteKey} has sent one (before that, bytes sent its
   * way could meet its side's handshake).
   */
  default void heard(Link link, String remoteKey) {
  }

  /**
   * {@code link} to {@code remoteKey} closed, because of {@code why}; {@code outbound} if this endpoint dialled
   * it. Called once per link.
   */
  void lost(String remoteKey, Link link, boolean outbound, String why);
}
