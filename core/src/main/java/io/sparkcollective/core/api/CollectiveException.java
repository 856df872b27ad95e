package io.sparkcollective.core.api;

/**
 * Base of every error this library throws. Unchecked, as collective failures are not something a training
 * step can recover from locally. The subtype tells the caller what to do:
 *
 * <ul>
 *   <li>{@link CollectiveUsageException}: a bad argument found locally; fix the call, the group is unharmed.
 *   <li>{@link PeerLostException}: a peer or the link to it is gone; build a new group.
 *   <li>{@link RemoteFailureException}: another rank failed and aborted the group; not this rank's fault.
 *   <li>{@link CollectiveTimeoutException}: a peer did not answer within the operation's deadline.
 *   <li>{@link CollectiveMismatchException}: ranks called different operations, lengths, types or roots.
 *   <li>{@link CollectiveCancelledException}: this rank's caller was cancelled (task killed, thread interrupted).
 * </ul>
 *
 * <p>Apart from usage errors, every error fails the group: the communicator keeps the first failure and
 * throws it from every operation in progress and every later one.
 */
public class CollectiveException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public CollectiveException(String message) {
    super(message);
  }

  public CollectiveException(String message, Throwable cause) {
    super(message, cause);
  }

  /** True if this error leaves the group usable (only argument errors found locally do). */
  public boolean groupUsable() {
    return false;
  }
}
