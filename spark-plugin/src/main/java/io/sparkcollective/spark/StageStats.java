package io.sparkcollective.spark;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveKind;
import io.sparkcollective.core.engine.OperationObserver;
import io.sparkcollective.core.transport.LinkReceipts;

/**
 * One rank's record of its group, for the driver's per-stage summary ({@link StageSummaries}): how long the
 * group took to form, its operations and bytes, the all-reduces' time, and the duration of each of the first
 * {@link #MAX_OPS} operations (which rank arrived last at an operation shows in them: it waited least). Feeds
 * the executor's metrics too. Operations may complete on several threads.
 */
final class StageStats implements OperationObserver {
  /** Operations whose durations are kept (a bounded report; later ones still count). */
  static final int MAX_OPS = 4096;

  private final OperationObserver next;
  private final long[] micros = new long[MAX_OPS];
  private int recorded;
  private long operations;
  private long bytes;
  private long allReduceBytes;
  private long allReduceNanos;
  private long formedNanos;

  StageStats(OperationObserver next) {
    this.next = next;
  }

  synchronized void formed(long nanos) {
    formedNanos = nanos;
  }

  @Override
  public void completed(CollectiveKind kind, long opBytes, long nanos) {
    synchronized (this) {
      if (recorded < MAX_OPS) {
        micros[recorded++] = nanos / 1000;
      }
      operations++;
      bytes += opBytes;
      if (kind == CollectiveKind.ALL_REDUCE) {
        allReduceBytes += opBytes;
        allReduceNanos += nanos;
      }
    }
    next.completed(kind, opBytes, nanos);
  }

  @Override
  public void failed(CollectiveKind kind, CollectiveException error) {
    next.failed(kind, error);
  }

  /**
   * The report of rank {@code rank} of {@code size} of {@code group}, of attempt {@code attempt} of {@code stage},
   * whose endpoint is on {@code host} and which received {@code receipts} (null: none) over the network.
   */
  synchronized Messages.Stats report(String group, int stage, int attempt, int rank, int size, String host,
      LinkReceipts receipts) {
    int links = receipts == null ? 0 : receipts.size();
    long[] linkBytes = new long[links];
    long[] linkNanos = new long[links];
    for (int p = 0; p < links; p++) {
      linkBytes[p] = receipts.bytes(p);
      linkNanos[p] = receipts.nanos(p);
    }
    return new Messages.Stats(group, stage, attempt, rank, size, formedNanos, operations, bytes, allReduceBytes,
        allReduceNanos, java.util.Arrays.copyOf(micros, recorded), host, linkBytes, linkNanos);
  }
}
