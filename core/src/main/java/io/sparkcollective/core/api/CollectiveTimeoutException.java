package io.sparkcollective.core.api;

/** An operation's deadline passed while waiting for a peer; the message names the peer and the step. */
public class CollectiveTimeoutException extends CollectiveException {
  private static final long serialVersionUID = 1L;
  private final int peerRank;

  public CollectiveTimeoutException(int peerRank, String message) {
    super(message);
    this.peerRank = peerRank;
  }

  /** The rank this one was waiting for. */
  public int peerRank() {
    return peerRank;
  }
}
