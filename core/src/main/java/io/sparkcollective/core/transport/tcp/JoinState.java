package io.sparkcollective.core.transport.tcp;

import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.time.NanoClock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Which peers of one rank have joined its group: a JOIN is admitted only from the endpoint the group names
 * for its rank, once, with the same group size; a refusal from a peer ends the join. Threads: the connection
 * readers admit; the joining thread waits.
 */
final class JoinState {
  /** Longest wait between looks at the join's refusal, failure, cancellation and deadline. */
  private static final long CHECK_MS = Tuning.JOIN_CHECK_MS;

  private final String groupName;
  private final int rank;
  private final String[] peerKeys;
  private final boolean[] joined;
  private String refusal;

  JoinState(String groupName, int rank, String[] peerKeys) {
    this.groupName = groupName;
    this.rank = rank;
    this.peerKeys = peerKeys;
    this.joined = new boolean[peerKeys.length];
    this.joined[rank] = true;
  }

  /**
   * Admits the JOIN of rank {@code source}, received from endpoint {@code remoteKey}, claiming a group of
   * {@code claimedSize}; returns why it is refused, or null.
   */
  synchronized String admit(String remoteKey, int source, int claimedSize) {
    int size = joined.length;
    if (source < 0 || source >= size || source == rank) {
      return "rank " + source + " is not a peer of rank " + rank + " in a group of " + size;
    }
    if (claimedSize != size) {
      return "group size differs: rank " + rank + " has " + size + " ranks, rank " + source + " has " + claimedSize;
    }
    if (!remoteKey.equals(peerKeys[source])) {
      return "rank " + source + " is expected at " + peerKeys[source] + " but joined from " + remoteKey;
    }
    if (joined[source]) {
      return "duplicate rank " + source + " (it already joined)";
    }
    joined[source] = true;
    notifyAll();
    return null;
  }

  synchronized boolean hasJoined(int peer) {
    return joined[peer];
  }

  /** Rank {@code source} refused this rank's JOIN: the join fails with {@code reason}. */
  synchronized void refused(int source, String reason) {
    refusal = "rank " + source + " (" + peerKeys[source] + ") refused rank " + rank + " of group " + groupName
        + ": " + reason;
    notifyAll();
  }

  /**
   * Waits until every peer has joined, the deadline passes (then throws, naming the missing ranks), a peer
   * refuses, {@code failure} reports the group failed or {@code cancellation} fires.
   */
  synchronized void await(long deadlineNanos, long timeoutMs, NanoClock clock, Supplier<CollectiveException> failure,
      Cancellation cancellation) {
    while (true) {
      if (refusal != null) {
        throw new CollectiveUsageException(refusal);
      }
      CollectiveException f = failure.get();
      if (f != null) {
        throw f;
      }
      checkCancelled(cancellation);
      List<Integer> missing = new ArrayList<>();
      for (int r = 0; r < joined.length; r++) {
        if (!joined[r]) {
          missing.add(r);
        }
      }
      if (missing.isEmpty()) {
        return;
      }
      long left = deadlineNanos - clock.nanoTime();
      if (left <= 0) {
        throw new CollectiveTimeoutException(missing.get(0), "rank " + rank + " of group " + groupName
            + ": ranks " + missing + " did not join within " + timeoutMs + " ms");
      }
      try {
        wait(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(left), CHECK_MS)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        checkCancelled(cancellation);
      }
    }
  }

  /** Throws if the joining rank's caller was cancelled (or its thread interrupted). */
  void checkCancelled(Cancellation cancellation) {
    String why = Cancellation.check(cancellation);
    if (why != null) {
      throw new CollectiveCancelledException("rank " + rank + " of group " + groupName + " left the join: " + why);
    }
  }
}
