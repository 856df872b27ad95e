package io.sparkcollective.core.transport.fault;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.transport.ForwardingTransport;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.Transport;
import java.util.ArrayDeque;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Wraps any {@link Transport} and applies a {@link FaultPolicy} to every frame sent: drop it, delay it
 * (keeping per-link order, as a slow TCP link would), or break the link as a crashed connection would.
 * Receiving is untouched, so the wrapped rank sees faults exactly as its peers' real transports report
 * them.
 */
public final class FaultInjectingTransport extends ForwardingTransport {
  private final FaultPolicy policy;
  private final ArrayDeque<Frame>[] heldBack;
  private ScheduledExecutorService delayer;

  public FaultInjectingTransport(Transport delegate, FaultPolicy policy) {
    super(delegate);
    this.policy = policy;
    this.heldBack = newQueues(delegate.size());
  }

  @Override
  public Frame acquireFor(int peer, int payloadBytes) {
    // A frame may be held back (DELAY) and sent later from another thread: never one on loan on the way to
    // its peer.
    return delegate.acquire(payloadBytes);
  }

  @Override
  public void send(int peer, Frame frame) {
    FaultPolicy.Action action = policy.onSend(delegate.rank(), peer, frame);
    switch (action) {
      case DROP:
        delegate.release(frame);
        return;
      case BREAK_LINK:
        delegate.release(frame);
        delegate.disconnect(peer, "fault injected at step " + frame.step());
        // The sender learns it the way a real one would: the link is gone.
        delegate.send(peer, delegate.acquire(0));
        return;
      case DELAY:
        schedule(peer, frame, TimeUnit.MILLISECONDS.toNanos(policy.delayMs(delegate.rank(), peer, frame)));
        return;
      case PASS:
      default:
        schedule(peer, frame, 0);
    }
  }

  /**
   * Sends now, unless earlier frames on this link are still held back: then queues behind them. Each
   * scheduled task sends the head of its link's queue, not "its" frame, so order holds however the
   * timer orders tasks due at nearly the same time.
   */
  private void schedule(int peer, Frame frame, long delayNanos) {
    synchronized (heldBack) {
      if (delayNanos == 0 && heldBack[peer].isEmpty()) {
        delegate.send(peer, frame);
        return;
      }
      heldBack[peer].addLast(frame);
    }
    delayer().schedule(() -> {
      Frame head;
      synchronized (heldBack) {
        head = heldBack[peer].pollFirst();
        if (head == null) {
          return;
        }
        try {
          delegate.send(peer, head);
        } catch (CollectiveException ignored) {
          // The sender finds the failure on its next receive.
        }
      }
    }, delayNanos, TimeUnit.NANOSECONDS);
  }

  private synchronized ScheduledExecutorService delayer() {
    if (delayer == null) {
      ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "collective-fault-delay-" + delegate.rank());
        t.setDaemon(true);
        return t;
      });
      delayer = ex;
    }
    return delayer;
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static ArrayDeque<Frame>[] newQueues(int n) {
    ArrayDeque<Frame>[] queues = new ArrayDeque[n];
    for (int i = 0; i < n; i++) {
      queues[i] = new ArrayDeque<>();
    }
    return queues;
  }














  @Override
  public void close() {
    synchronized (this) {
      if (delayer != null) {
        // Held-back frames still go to the (closed) delegate, which releases them.
        delayer.shutdown();
      }
    }
    delegate.close();
  }
}
