package io.sparkcollective.core.transport.tcp.direct;

/**
 * How a thread waiting for a frame spends the wait, in three phases by how long it has waited: it polls in
 * a tight loop ({@link Phase#SPIN}, for the first {@code spinPolls} polls), then polls and gives its core
 * away between polls ({@link Phase#YIELD}, until {@code yieldNanos} have passed), then blocks, in slices of
 * at most {@code parkSliceNanos} so that it looks at deadlines, failures and cancellation between them
 * ({@link Phase#PARK}). Stateless: the waiting loop counts its own polls and time.
 */
public final class IdleStrategy {
  /** The phases of a wait, in order. */
  public enum Phase { SPIN, YIELD, PARK }

  private final int spinPolls;
  private final long yieldNanos;
  private final long parkSliceNanos;

  public IdleStrategy(int spinPolls, long yieldNanos, long parkSliceNanos) {
    if (spinPolls < 0 || yieldNanos < 0 || parkSliceNanos <= 0) {
      throw new IllegalArgumentException("idle strategy: spinPolls " + spinPolls + ", yieldNanos " + yieldNanos
          + ", parkSliceNanos " + parkSliceNanos);
    }
    this.spinPolls = spinPolls;
    this.yieldNanos = yieldNanos;
    this.parkSliceNanos = parkSliceNanos;
  }

  /** The phase of a wait that has polled {@code polls} times so far, for {@code waitedNanos}. */
  public Phase phase(int polls, long waitedNanos) {
    if (polls < spinPolls) {
      return Phase.SPIN;
    }
    return waitedNanos < yieldNanos ? Phase.YIELD : Phase.PARK;
  }

  /** Between two polls of a spinning or yielding wait. */
  public void pause(Phase phase) {
    if (phase == Phase.SPIN) {
      Thread.onSpinWait();
    } else if (phase == Phase.YIELD) {
      Thread.yield();
    }
  }

  /** How long one block of a parked wait lasts, {@code leftNanos} before its deadline: at least 1 ns. */
  public long parkNanos(long leftNanos) {
    return Math.max(1, Math.min(leftNanos, parkSliceNanos));
  }

  @Override
  public String toString() {
    return "spin " + spinPolls + " polls, yield until " + yieldNanos + " ns, park in slices of " + parkSliceNanos
        + " ns";
  }
}
