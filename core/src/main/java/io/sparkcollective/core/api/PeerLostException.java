package io.sparkcollective.core.api;

/** A peer, or the link to it, is gone (closed connection, crashed process). The group must be rebuilt. */
public class PeerLostException extends CollectiveException {
  private static final long serialVersionUID = 1L;
  private final int peerRank;

  public PeerLostException(int peerRank, String message) {
    super(message);
    this.peerRank = peerRank;
  }

  public PeerLostException(int peerRank, String message, Throwable cause) {
    super(message, cause);
    this.peerRank = peerRank;
  }

  /** The rank that was lost. */
  public int peerRank() {
    return peerRank;
  }
}
