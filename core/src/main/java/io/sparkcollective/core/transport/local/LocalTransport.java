package io.sparkcollective.core.transport.local;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.CallSignature;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.FramePool;
import io.sparkcollective.core.transport.Inbox;
import io.sparkcollective.core.transport.Transport;

/** One rank's endpoint on a {@link LocalFabric}: sending is handing the frame to the peer's inbox. */
public final class LocalTransport implements Transport {
  private final LocalFabric fabric;
  private final int rank;
  private final int size;
  private final FramePool pool;
  private final Inbox inbox;
  private final NanoClock clock;
  private volatile boolean closed;

  LocalTransport(LocalFabric fabric, int rank, int size, FramePool pool, NanoClock clock) {
    this.fabric = fabric;
    this.rank = rank;
    this.size = size;
    this.pool = pool;
    this.clock = clock;
    this.inbox = new Inbox(size, clock, pool);
  }

  Inbox inbox() {
    return inbox;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  /** Every rank is a thread of this process. */
  @Override
  public boolean memoryToAll() {
    return true;
  }

  /** Every rank is a thread of this process: one node. */
  @Override
  public int[] nodes() {
    return new int[size()];
  }

  @Override
  public String describe(int r) {
    return "rank " + r;
  }

  @Override
  public Frame acquire(int payloadBytes) {
    return pool.acquire(payloadBytes);
  }

  @Override
  public void release(Frame frame) {
    pool.release(frame);
  }

  @Override
  public int maxFrameBytes() {
    return pool.maxCapacity();
  }

  @Override
  public void send(int peer, Frame frame) {
    CollectiveException failed = inbox.failure();
    if (failed != null) {
      pool.release(frame);
      throw failed;
    }
    if (fabric.isBroken(rank, peer)) {
      pool.release(frame);
      throw new PeerLostException(peer, "rank " + rank + " cannot send to rank " + peer + ": link is down");
    }
    fabric.endpoint(peer).inbox.deliver(rank, frame);
  }

  @Override
  public Frame receive(int peer, int stream, long seq, long deadlineNanos) {
    return inbox.receive(peer, stream, seq, deadlineNanos);
  }

  @Override
  public void abort(CollectiveException cause) {
    inbox.fail(cause);
    if (inbox.claimAbortNotice()) {
      int origin = inbox.failureOrigin(rank);
      String reason = inbox.failureReason();
      for (int p = 0; p < size; p++) {
        if (p != rank) {
          fabric.deliverAbort(rank, p, origin, reason);
        }
      }
    }
  }

  @Override
  public String findDisagreement(int stream, long seq, int except, CallSignature call) {
    return inbox.findDisagreement(stream, seq, except, call);
  }

  @Override
  public CollectiveException failure() {
    return inbox.failure();
  }

  @Override
  public CollectiveException departure() {
    return inbox.departure();
  }

  @Override
  public void disconnect(int peer, String reason) {
    fabric.breakLink(rank, peer, reason);
  }

  @Override
  public long nanoTime() {
    return clock.nanoTime();
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    inbox.fail(new CollectiveException("rank " + rank + " is closed"));
    inbox.close();
    for (int p = 0; p < size; p++) {
      if (p != rank) {
        fabric.deliverLeave(rank, p);
      }
    }
  }
}
