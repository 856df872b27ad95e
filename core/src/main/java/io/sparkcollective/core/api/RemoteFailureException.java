package io.sparkcollective.core.api;

/**
 * Another rank failed and aborted the group; its message is part of this one. This rank did nothing
 * wrong, but the group is failed and must be rebuilt.
 */
public class RemoteFailureException extends CollectiveException {
  private static final long serialVersionUID = 1L;
  private final int originRank;
  private final String reason;

  /** {@code reason} is the origin rank's own description of its failure. */
  public RemoteFailureException(int originRank, String reason) {
    super("rank " + originRank + " aborted the group: " + reason);
    this.originRank = originRank;
    this.reason = reason;
  }

  /** The origin rank's own description of its failure. */
  public String reason() {
    return reason;
  }

  /** The rank that reported the failure first. */
  public int originRank() {
    return originRank;
  }
}
