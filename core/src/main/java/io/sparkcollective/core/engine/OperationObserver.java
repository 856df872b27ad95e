package io.sparkcollective.core.engine;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveKind;

/**
 * Told of every operation an {@link EngineCommunicator} completes or fails, on the thread that ran it; the
 * Spark layer turns this into metrics. Implementations must be cheap and must not throw.
 */
public interface OperationObserver {
  OperationObserver NONE = new OperationObserver() {
    @Override
    public void completed(CollectiveKind kind, long bytes, long nanos) {
    }

    @Override
    public void failed(CollectiveKind kind, CollectiveException error) {
    }
  };

  /** {@code kind} moved a vector of {@code bytes} (of user data) in {@code nanos}. */
  void completed(CollectiveKind kind, long bytes, long nanos);

  /** {@code kind} failed with {@code error} (the group's failure). */
  void failed(CollectiveKind kind, CollectiveException error);
}
