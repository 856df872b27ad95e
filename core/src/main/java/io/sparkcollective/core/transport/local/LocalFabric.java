package io.sparkcollective.core.transport.local;

import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.api.RemoteFailureException;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.FramePool;

/**
 * The "network" of an in-JVM group: one {@link LocalTransport} per rank, all sharing one frame pool, so a
 * frame sent by one rank is handed to the receiver without a copy. Used for ranks that share an executor
 * and for tests of every algorithm.
 */
public final class LocalFabric {
  private final LocalTransport[] endpoints;
  private final boolean[][] broken;
  private final FramePool pool;
  private final NanoClock clock;

  public LocalFabric(int size, int maxFrameBytes, NanoClock clock) {
    if (size < 1) {
      throw new IllegalArgumentException("group size must be positive, got " + size);
    }
    this.pool = new FramePool(maxFrameBytes);
    this.clock = clock;
    this.broken = new boolean[size][size];
    this.endpoints = new LocalTransport[size];
    for (int r = 0; r < size; r++) {
      endpoints[r] = new LocalTransport(this, r, size, pool, clock);
    }
  }

  public int size() {
    return endpoints.length;
  }

  /** Rank {@code rank}'s endpoint. */
  public LocalTransport endpoint(int rank) {
    return endpoints[rank];
  }

  /** The pool all endpoints share (tests check {@link FramePool#outstanding()} for leaks). */
  public FramePool pool() {
    return pool;
  }

  NanoClock clock() {
    return clock;
  }

  synchronized boolean isBroken(int a, int b) {
    return broken[a][b];
  }

  void breakLink(int a, int b, String reason) {
    synchronized (this) {
      broken[a][b] = true;
      broken[b][a] = true;
    }
    // Both ends fail, then tell everyone else, as TCP endpoints that see their connection drop do.
    PeerLostException atA = new PeerLostException(b, "rank " + a + " lost its link to rank " + b + ": " + reason);
    PeerLostException atB = new PeerLostException(a, "rank " + b + " lost its link to rank " + a + ": " + reason);
    endpoints[a].inbox().fail(atA);
    endpoints[b].inbox().fail(atB);
    endpoints[a].abort(atA);
    endpoints[b].abort(atB);
  }

  void deliverAbort(int from, int to, int origin, String reason) {
    if (isBroken(from, to)) {
      return;
    }
    endpoints[to].inbox().fail(new RemoteFailureException(origin, reason));
  }

  void deliverLeave(int from, int to) {
    if (isBroken(from, to)) {
      return;
    }
    endpoints[to].inbox().markGone(from, new PeerLostException(from, "rank " + from + " left the group (closed)"));
  }
}
