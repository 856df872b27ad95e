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
  public static final CollectiveOptions DEFAULT = new CollectiveOptions(-1, Algorithm.AUTO, 0, null);

  private final long timeoutMs;
  private final Algorithm algorithm;
  private final int tag;
  private final DType wireType;

  private CollectiveOptions(long timeoutMs, Algorithm algorithm, int tag, DType wireType) {
    this.timeoutMs = timeoutMs;
    this.algorithm = algorithm;
    this.tag = tag;
    this.wireType = wireType;
  }

  /** Fails the operation if it has not completed within {@code timeout}. */
  public CollectiveOptions withTimeout(Duration timeout) {
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new CollectiveUsageException("timeout must be positive, got " + timeout);
    }
    return new CollectiveOptions(timeout.toMillis(), algorithm, tag, wireType);
  }

  /** Forces an all-reduce algorithm instead of the size-based choice. */
  public CollectiveOptions withAlgorithm(Algorithm algorithm) {
    if (algorithm == null) {
      throw new CollectiveUsageException("algorithm is null");
    }
    return new CollectiveOptions(timeoutMs, algorithm, tag, wireType);
  }

  /** Runs the operation on its own ordered stream; see the class comment. */
  public CollectiveOptions withTag(int tag) {
    if (tag < 0 || tag >= MAX_TAGS) {
      throw new CollectiveUsageException("tag must be in [0, " + MAX_TAGS + "), got " + tag);
    }
    return new CollectiveOptions(timeoutMs, algorithm, tag, wireType);
  }

  /**
   * What a reduction (allReduce, reduceScatter) sends on the wire; {@code null} (the default) sends each type
   * as itself. Every rank must pass the same setting (a mismatch fails the call on all ranks); a group of one
   * rank leaves the data as it is.
   * <ul>
   *   <li>{@link DType#BF16} for F32 data: wire compression, every value crosses the network as bfloat16 (half
   *       the bytes); sums are still formed in F32 and the result, the same bits on every rank, is rounded to
   *       bfloat16 precision (8 significant bits: a relative error of about 2^-8 per hop, fine for gradients,
   *       not for exact arithmetic). Inputs are rounded to bfloat16 first, so the user's buffer holds rounded
   *       values if the operation fails.</li>
   *   <li>{@link DType#F32} for F16 and BF16 data: the exact mode. By default these types travel in their own 16
   *       bits, each partial sum rounded to the type where it is sent on; with an F32 wire they travel widened
   *       (twice the bytes) and the sum is rounded once, at the end (see {@link DType}).</li>
   * </ul>
   */
  public CollectiveOptions withWireType(DType wireType) {
    if (wireType != null && wireType != DType.BF16 && wireType != DType.F32) {
      throw new CollectiveUsageException("wire type must be BF16, F32 (or null for the data's own), got "
          + wireType);
    }
    return new CollectiveOptions(timeoutMs, algorithm, tag, wireType);
  }

  /** The wire type of reductions, or null for the data's own. */
  public DType wireType() {
    return wireType;
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
    return "CollectiveOptions{timeoutMs=" + timeoutMs + ", algorithm=" + algorithm + ", tag=" + tag
        + (wireType == null ? "" : ", wireType=" + wireType) + "}";
  }
}
