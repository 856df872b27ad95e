package io.sparkcollective.core.api;

import java.time.Duration;

/**
 * Per-call options: deadline, algorithm and tag. Immutable; start from {@link #DEFAULT} and derive with
 * the {@code with*} methods. Ranks must pass the same algorithm and tag for the same call.
 *
 * <p>Tags separate independent streams of operations on one communicator: operations on different tags
 * may run at the same time from different threads; on one tag every rank must issue them in the same
 * order.
 */
public final class CollectiveOptions {
  /** Number of tags; valid tags are 0 to {@code MAX_TAGS - 1}. */
  public static final int MAX_TAGS = 64;

  /** The communicator's configured timeout, algorithm selection by size, tag 0. */
  public static final CollectiveOptions DEFAULT = new CollectiveOptions(-1, Algorithm.AUTO, 0);

  private final long timeoutMs;
  private final Algorithm algorithm;
  private final int tag;

  private CollectiveOptions(long timeoutMs, Algorithm algorithm, int tag) {
    this.timeoutMs = timeoutMs;
    this.algorithm = algorithm;
    this.tag = tag;
  }

  /** Fails the operation if it has not completed within {@code timeout}. */
  public CollectiveOptions withTimeout(Duration timeout) {
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new CollectiveUsageException("timeout must be positive, got " + timeout);
    }
    return new CollectiveOptions(timeout.toMillis(), algorithm, tag);
  }

  /** Forces an all-reduce algorithm instead of the size-based choice. */
  public CollectiveOptions withAlgorithm(Algorithm algorithm) {
    if (algorithm == null) {
      throw new CollectiveUsageException("algorithm is null");
    }
    return new CollectiveOptions(timeoutMs, algorithm, tag);
  }

  /** Runs the operation on its own ordered stream; see the class comment. */
  public CollectiveOptions withTag(int tag) {
    if (tag < 0 || tag >= MAX_TAGS) {
      throw new CollectiveUsageException("tag must be in [0, " + MAX_TAGS + "), got " + tag);
    }
    return new CollectiveOptions(timeoutMs, algorithm, tag);
  }

  /** Timeout in milliseconds, or -1 for the communicator's default. */
  public long timeoutMs() {
    return timeoutMs;
  }

  public Algorithm algorithm() {
    return algorithm;
  }

  public int tag() {
    return tag;
  }

  @Override
  public String toString() {
    return "CollectiveOptions{timeoutMs=" + timeoutMs + ", algorithm=" + algorithm + ", tag=" + tag + "}";
  }
}
