package io.sparkcollective.core.transport;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What one rank received from each peer over a network connection: the bytes of DATA payloads of at least
 * {@link #MIN_PAYLOAD_BYTES} and the time they took to arrive, from a payload's first byte to its last. Their
 * quotient is the rate the link from that peer delivered at while it was busy, which points at a slow link
 * or host (smaller payloads arrive in one piece and say nothing about the link). Payloads through shared
 * memory or between ranks of one process are not counted. Recorded by the threads reading connections.
 */
public final class LinkReceipts {
  /** Payloads smaller than this are not counted. */
  public static final int MIN_PAYLOAD_BYTES = 64 * 1024;

  private final AtomicLongArray counts;

  public LinkReceipts(int size) {
    this.counts = new AtomicLongArray(2 * size);
  }

  /** A payload of {@code bytes} from {@code source} took {@code nanos} to arrive (negative: not timed). */
  public void record(int source, int bytes, long nanos) {
    if (bytes >= MIN_PAYLOAD_BYTES && nanos >= 0) {
      counts.addAndGet(2 * source, bytes);
      counts.addAndGet(2 * source + 1, nanos);
    }
  }

  /** Number of ranks. */
  public int size() {
    return counts.length() / 2;
  }

  /** Payload bytes counted from {@code source}. */
  public long bytes(int source) {
    return counts.get(2 * source);
  }

  /** Nanoseconds those bytes took to arrive. */
  public long nanos(int source) {
    return counts.get(2 * source + 1);
  }
}
