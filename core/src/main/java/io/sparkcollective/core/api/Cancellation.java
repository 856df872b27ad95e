package io.sparkcollective.core.api;

/**
 * The host framework's stop signal for one rank, which every blocking wait of that rank's group checks
 * between short slices (at most a few tens of milliseconds apart): the join, each collective, the object
 * collectives, barrier, send/recv and the operations behind async futures. In Spark it is the task's kill
 * flag, so a task that Spark kills (because a barrier peer failed, or its job or stage was cancelled) leaves
 * its call at once; outside Spark it is whatever the caller stops on. An interrupted thread is
 * cancelled as well, whatever this says.
 *
 * <p>When it fires, the waiting call throws {@link CollectiveCancelledException} and the group is aborted,
 * so the peers stop too.
 */
@FunctionalInterface
public interface Cancellation {
  /** Never fires. */
  Cancellation NONE = () -> null;

  /**
   * Null while the rank may go on waiting; once it must stop, why (for instance "task 12 was killed: ...").
   * Called often from waiting threads: it must be cheap and must not block.
   */
  String reason();

  /**
   * Why the calling rank must stop waiting, or null if it may go on: "the thread was interrupted" if it is
   * (its interrupt status is kept), else what {@code c} says.
   */
  static String check(Cancellation c) {
    if (Thread.currentThread().isInterrupted()) {
      return "the thread was interrupted";
    }
    return c.reason();
  }
}
