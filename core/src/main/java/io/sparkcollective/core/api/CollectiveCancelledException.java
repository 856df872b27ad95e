package io.sparkcollective.core.api;

/**
 * This rank's own caller gave up while it waited: its {@link Cancellation} fired (in Spark: the task was
 * killed) or its thread was interrupted. The group is aborted, so the peers fail too (with a
 * {@link RemoteFailureException} carrying this message); nothing is wrong with the group's ranks or links.
 */
public class CollectiveCancelledException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  public CollectiveCancelledException(String message) {
    super(message);
  }
}
