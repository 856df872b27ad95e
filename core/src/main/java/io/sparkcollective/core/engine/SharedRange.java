package io.sparkcollective.core.engine;

import io.sparkcollective.core.kernel.Elements;
import io.sparkcollective.core.transport.Frame;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A range of one rank's vector offered to a rank of the same process, which reads it in place instead of
 * receiving a copy in frames. The offering rank must not change the range, nor return from its operation,
 * until the reader is done: {@link #take} and {@link #done} on the reader's side, {@link #revoke} on the
 * owner's when its operation fails (a reader that has not started then fails instead of reading).
 */
final class SharedRange implements Frame.SharedRegion {
  private static final int OFFERED = 0;
  private static final int READING = 1;
  private static final int REVOKED = 2;
  private static final int DONE = 3;

  // Set before the range is handed over (the hand-over publishes them), reset only once it is done.
  Elements elements;
  int offset;
  int count;
  private Thread owner;
  private final AtomicInteger state = new AtomicInteger(OFFERED);

  SharedRange(Elements elements, int offset, int count, Thread owner) {
    reset(elements, offset, count, owner);
  }

  /** Offers this object again for another range; only after {@link #isDone} (the reader no longer uses it). */
  SharedRange reset(Elements elements, int offset, int count, Thread owner) {
    this.elements = elements;
    this.offset = offset;
    this.count = count;
    this.owner = owner;
    state.set(OFFERED);
    return this;
  }

  /** Owner, once done: drops the references to the vector and the thread (the object waits for reuse). */
  SharedRange forget() {
    elements = null;
    owner = null;
    return this;
  }

  /** Reader: starts reading; false if the owner withdrew the range (its operation failed). */
  boolean take() {
    return state.compareAndSet(OFFERED, READING);
  }

  /** Reader: finished reading; the owner may go on. */
  void done() {
    Thread t = owner;
    state.set(DONE);
    LockSupport.unpark(t);
  }

  boolean isDone() {
    return state.get() == DONE;
  }

  /** Owner: withdraws the range if nobody has started reading it; waits briefly for a reader that has. */
  void revoke() {
    if (state.compareAndSet(OFFERED, REVOKED)) {
      return;
    }
    // A reader copies at memory speed: a bounded wait, so a stuck reader cannot hang the owner's failure.
    long until = System.nanoTime() + 1_000_000_000L;
    while (state.get() == READING && System.nanoTime() < until) {
      LockSupport.parkNanos(this, 100_000);
    }
  }
}
