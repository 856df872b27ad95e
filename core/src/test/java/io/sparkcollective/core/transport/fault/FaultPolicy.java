package io.sparkcollective.core.transport.fault;

import io.sparkcollective.core.transport.Frame;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Decides, for every frame a rank sends, whether {@link FaultInjectingTransport} passes it, drops it,
 * delays it or breaks the link. Implementations are called from sending threads concurrently and must be
 * thread-safe; the seeded ones are deterministic for a given seed and send order.
 */
@FunctionalInterface
public interface FaultPolicy {

  /** What to do with one frame. */
  enum Action {
    PASS,
    DROP,
    DELAY,
    BREAK_LINK
  }

  /** The decision for a frame from {@code from} to {@code to}; {@link #delayMs} gives the delay. */
  Action onSend(int from, int to, Frame frame);

  /** How long a {@link Action#DELAY}ed frame waits. */
  default long delayMs(int from, int to, Frame frame) {
    return 0;
  }

  /** Passes everything. */
  static FaultPolicy none() {
    return (from, to, frame) -> Action.PASS;
  }

  /** Breaks the link {@code from -> to} when {@code from} sends its first frame of {@code step}. */
  static FaultPolicy breakLinkAtStep(int from, int to, int step) {
    return (f, t, frame) -> f == from && t == to && frame.step() == step ? Action.BREAK_LINK : Action.PASS;
  }

  /**
   * Breaks the link of the first frame any rank sends at {@code step} (share one instance between the
   * ranks' transports); everything else passes.
   */
  static FaultPolicy breakFirstLinkAtStep(int step) {
    AtomicBoolean fired = new AtomicBoolean();
    return (f, t, frame) -> frame.step() == step && fired.compareAndSet(false, true) ? Action.BREAK_LINK : Action.PASS;
  }

  /** Drops the first frame any rank sends at {@code step} (share one instance between the ranks). */
  static FaultPolicy dropFirstAtStep(int step) {
    AtomicBoolean fired = new AtomicBoolean();
    return (f, t, frame) -> frame.step() == step && fired.compareAndSet(false, true) ? Action.DROP : Action.PASS;
  }

  /** Drops every frame {@code from -> to} of {@code step}. */
  static FaultPolicy dropAtStep(int from, int to, int step) {
    return (f, t, frame) -> f == from && t == to && frame.step() == step ? Action.DROP : Action.PASS;
  }

  /** Delays every frame by {@code delayMs} (order on each link is kept). */
  static FaultPolicy delayAll(long delayMs) {
    return new FaultPolicy() {
      @Override
      public Action onSend(int from, int to, Frame frame) {
        return Action.DELAY;
      }

      @Override
      public long delayMs(int from, int to, Frame frame) {
        return delayMs;
      }
    };
  }

  /**
   * Random faults from a seed: each frame is dropped with probability {@code dropP}, else delayed by up to
   * {@code maxDelayMs} with probability {@code delayP}.
   */
  static FaultPolicy seeded(long seed, double dropP, double delayP, long maxDelayMs) {
    SplittableRandom random = new SplittableRandom(seed);
    return new FaultPolicy() {
      private long pendingDelay;

      @Override
      public synchronized Action onSend(int from, int to, Frame frame) {
        double x = random.nextDouble();
        if (x < dropP) {
          return Action.DROP;
        }
        if (x < dropP + delayP) {
          pendingDelay = 1 + random.nextLong(Math.max(1, maxDelayMs));
          return Action.DELAY;
        }
        return Action.PASS;
      }

      @Override
      public synchronized long delayMs(int from, int to, Frame frame) {
        return pendingDelay;
      }
    };
  }
}
