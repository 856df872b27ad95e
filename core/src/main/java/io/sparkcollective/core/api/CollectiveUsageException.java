package io.sparkcollective.core.api;

/**
 * A call was wrong (null or too small buffer, bad root, type mismatch with the arguments, closed
 * communicator). Found before anything was sent, so the group stays usable.
 */
public class CollectiveUsageException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  public CollectiveUsageException(String message) {
    super(message);
  }

  @Override
  public boolean groupUsable() {
    return true;
  }
}
