package io.sparkcollective.core.transport.tcp.link;

/** Hears of an endpoint's links coming and going (the endpoint's connection table). */
public interface LinkListener {
  /** {@code link} to {@code remoteKey} is authenticated and ready for messages. */
  void opened(Link link, String remoteKey);

  /**
   * {@code link} to {@code remoteKey} closed, because of {@code why}; {@code outbound} if this endpoint dialled
   * it. Called once per link.
   */
  void lost(String remoteKey, Link link, boolean outbound, String why);
}
