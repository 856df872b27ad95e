package io.sparkcollective.core.transport;

import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.RemoteFailureException;
import io.sparkcollective.core.time.NanoClock;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The receiving side shared by transports: one queue per source rank, matched by (stream, sequence), and
 * the rank's failure state. A failure wakes every waiter at once, so no receive outlives the group.
 *
 * <p>Locking: each source queue is its own monitor; {@link #fail} takes them one after another.
 */
public final class Inbox {
  private static final java.util.function.BooleanSupplier NO_HANDOVER = () -> false;
  private final SourceQueue[] queues;
  private final AtomicReference<CollectiveException> failure = new AtomicReference<>();
  private final AtomicBoolean abortNoticeClaimed = new AtomicBoolean();
  private final NanoClock clock;
  private final FramePool pool;
  private volatile boolean closed;
  /** A thread blocked elsewhere (in a socket poll) on behalf of this inbox, and how to wake it. */
  private volatile Thread blockedElsewhere;
  private volatile Runnable wakeBlocked;

  public Inbox(int size, NanoClock clock, FramePool pool) {
    this.clock = clock;
    this.pool = pool;
    this.queues = new SourceQueue[size];
    for (int i = 0; i < size; i++) {
      queues[i] = new SourceQueue();
    }
  }

  /** Adds a frame from {@code source}; takes ownership (released at once if this rank is closed). */
  public void deliver(int source, Frame frame) {
    SourceQueue q = queues[source];
    synchronized (q) {
      if (!closed) {
        q.add(frame);
        q.wakeAll();
        wakeBlockedElsewhere();
        return;
      }
    }
    pool.release(frame);
  }

  /**
   * Marks the calling thread as blocked outside this inbox (in a socket poll) until {@link #unblocked}, so that
   * a frame delivered or a failure recorded by another thread meanwhile runs {@code wake} (which must make
   * that poll return).
   */
  public void blockedElsewhere(Runnable wake) {
    wakeBlocked = wake;
    blockedElsewhere = Thread.currentThread();
  }

  public void unblocked() {
    blockedElsewhere = null;
  }

  private void wakeBlockedElsewhere() {
    Thread t = blockedElsewhere;
    if (t != null && t != Thread.currentThread()) {
      wakeBlocked.run();
    }
  }

  /**
   * The frame of ({@code stream}, {@code seq}) from {@code source} if it has arrived, else null, without
   * waiting.
   *
   * @throws CollectiveException the rank's failure, or the source's departure once its frames are used up
   */
  public Frame poll(int source, int stream, long seq) {
    SourceQueue q = queues[source];
    synchronized (q) {
      CollectiveException f = failure.get();
      if (f != null) {
        throw f;
      }
      Frame frame = q.take(stream, seq);
      if (frame == null && q.gone != null) {
        throw q.gone;
      }
      return frame;
    }
  }

  /**
   * Parks until a frame from {@code source} arrives (returns at once if the one for ({@code stream},
   * {@code seq}) is already here), the rank fails, {@code until} passes or the thread is
   * unparked otherwise (spuriously or by {@code handover}); returns at once if {@code handover} says the
   * thread may drive the sockets itself. Callers re-check with {@link #poll}.
   */
  public void awaitDelivery(int source, int stream, long seq, long until,
      java.util.function.BooleanSupplier handover) {
    SourceQueue q = queues[source];
    Thread me = Thread.currentThread();
    synchronized (q) {
      if (failure.get() != null || q.gone != null || q.holds(stream, seq)) {
        return;
      }
      q.addWaiter(me);
    }
    try {
      if (!handover.getAsBoolean()) {
        long remaining = until - clock.nanoTime();
        if (remaining > 0) {
          LockSupport.parkNanos(this, Math.min(remaining, Tuning.INBOX_PARK_NANOS));
        }
      }
    } finally {
      synchronized (q) {
        q.removeWaiter(me);
      }
    }
    if (me.isInterrupted()) {
      throw new CollectiveCancelledException("interrupted while waiting for a frame from rank " + source);
    }
  }

  /** See {@link Transport#receive}. */
  public Frame receive(int source, int stream, long seq, long deadlineNanos) {
    while (true) {
      Frame frame = poll(source, stream, seq);
      if (frame != null) {
        return frame;
      }
      if (deadlineNanos - clock.nanoTime() <= 0) {
        return null;
      }
      awaitDelivery(source, stream, seq, deadlineNanos, NO_HANDOVER);
    }
  }

  /** Records {@code cause} if it is the first failure and wakes every waiter; true if it was the first. */
  public boolean fail(CollectiveException cause) {
    boolean first = failure.compareAndSet(null, cause);
    for (SourceQueue q : queues) {
      synchronized (q) {
        q.wakeAll();
      }
    }
    wakeBlockedElsewhere();
    return first;
  }

  /**
   * Marks {@code source} as gone (it left the group): frames it sent before leaving can still be received,
   * then receives from it throw {@code why}. Not a failure of this rank by itself.
   */
  public void markGone(int source, CollectiveException why) {
    SourceQueue q = queues[source];
    synchronized (q) {
      if (q.gone == null) {
        q.gone = why;
      }
      q.wakeAll();
    }
    wakeBlockedElsewhere();
  }

  public CollectiveException failure() {
    return failure.get();
  }

  /** Why the first peer marked gone left, or null if none has. */
  public CollectiveException departure() {
    for (SourceQueue q : queues) {
      synchronized (q) {
        if (q.gone != null) {
          return q.gone;
        }
      }
    }
    return null;
  }

  /** True once {@code source} has been marked gone. */
  public boolean isGone(int source) {
    SourceQueue q = queues[source];
    synchronized (q) {
      return q.gone != null;
    }
  }

  /**
   * True exactly once, for the caller that is to tell the peers of this rank's failure (ABORT): peers hear
   * of the first failure once, whoever recorded it.
   */
  public boolean claimAbortNotice() {
    return abortNoticeClaimed.compareAndSet(false, true);
  }

  /** The rank where the first failure started: {@code self}, unless it came from a peer's ABORT. */
  public int failureOrigin(int self) {
    CollectiveException f = failure.get();
    return f instanceof RemoteFailureException ? ((RemoteFailureException) f).originRank() : self;
  }

  /** The first failure as its origin described it (a relayed ABORT keeps the origin's words). */
  public String failureReason() {
    CollectiveException f = failure.get();
    return f instanceof RemoteFailureException ? ((RemoteFailureException) f).reason() : f.getMessage();
  }

  /** Stops accepting frames and releases the queued ones. */
  public void close() {
    closed = true;
    for (SourceQueue q : queues) {
      synchronized (q) {
        q.drainTo(pool);
        q.wakeAll();
      }
    }
  }

  /**
   * A frame queued from a rank other than {@code except} for ({@code stream}, {@code seq}) whose call differs
   * from {@code call}, described as "rank R called ..."; null if there is none. The receive of one operation
   * waits on one peer at a time, so such a frame reveals ranks that disagree (say, on the root) even while
   * the peer being waited for never sends.
   */
  public String findDisagreement(int stream, long seq, int except, CallSignature call) {
    for (int source = 0; source < queues.length; source++) {
      if (source == except) {
        continue;
      }
      SourceQueue q = queues[source];
      synchronized (q) {
        int mask = q.ring.length - 1;
        for (int i = 0; i < q.count; i++) {
          Frame f = q.ring[(q.head + i) & mask];
          String differs = f.stream() == stream && f.seq() == seq ? call.difference(f) : null;
          if (differs != null) {
            return differs + ": rank " + source + " called " + f.describeCall();
          }
        }
      }
    }
    return null;
  }

  /** Frames waiting in all queues (for tests and leak checks). */
  public int queued() {
    int n = 0;
    for (SourceQueue q : queues) {
      synchronized (q) {
        n += q.count;
      }
    }
    return n;
  }

  /** A growable ring of frames; removal by match keeps arrival order of the rest. */
  private static final class SourceQueue {
    /** Threads parked in receive, woken by every arrival (a few at most: one per concurrent operation). */
    Thread[] waiters = new Thread[4];
    int waiterCount;

    void addWaiter(Thread t) {
      if (waiterCount == waiters.length) {
        waiters = java.util.Arrays.copyOf(waiters, waiters.length * 2);
      }
      waiters[waiterCount++] = t;
    }

    void removeWaiter(Thread t) {
      for (int i = 0; i < waiterCount; i++) {
        if (waiters[i] == t) {
          waiters[i] = waiters[--waiterCount];
          waiters[waiterCount] = null;
          return;
        }
      }
    }

    /** Wakes every parked receiver; call holding the queue's monitor. */
    void wakeAll() {
      for (int i = 0; i < waiterCount; i++) {
        LockSupport.unpark(waiters[i]);
      }
    }
    Frame[] ring = new Frame[16];
    CollectiveException gone;
    int head;
    int count;

    void add(Frame f) {
      if (count == ring.length) {
        Frame[] bigger = new Frame[ring.length * 2];
        for (int i = 0; i < count; i++) {
          bigger[i] = ring[(head + i) & (ring.length - 1)];
        }
        ring = bigger;
        head = 0;
      }
      ring[(head + count) & (ring.length - 1)] = f;
      count++;
    }

    boolean holds(int stream, long seq) {
      int mask = ring.length - 1;
      for (int i = 0; i < count; i++) {
        Frame f = ring[(head + i) & mask];
        if (f.stream() == stream && f.seq() == seq) {
          return true;
        }
      }
      return false;
    }

    Frame take(int stream, long seq) {
      int mask = ring.length - 1;
      for (int i = 0; i < count; i++) {
        Frame f = ring[(head + i) & mask];
        if (f.stream() == stream && f.seq() == seq) {
          // Close the gap by shifting the earlier frames one slot towards the tail.
          for (int j = i; j > 0; j--) {
            ring[(head + j) & mask] = ring[(head + j - 1) & mask];
          }
          ring[head] = null;
          head = (head + 1) & mask;
          count--;
          return f;
        }
      }
      return null;
    }

    void drainTo(FramePool pool) {
      int mask = ring.length - 1;
      for (int i = 0; i < count; i++) {
        pool.release(ring[(head + i) & mask]);
        ring[(head + i) & mask] = null;
      }
      count = 0;
      head = 0;
    }
  }
}
