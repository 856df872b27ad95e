package io.sparkcollective.core.simulation;

/**
 * One simulated all-reduce: when each rank finished (virtual seconds from a common start), what it sent, and
 * how many steps and messages it took.
 */
public final class SimulationResult {
  private final double[] finishSeconds;
  private final long[] networkBytes;
  private final long[] localBytes;
  private final long messages;
  private final int steps;
  private final long events;

  SimulationResult(double[] finishSeconds, long[] networkBytes, long[] localBytes, long messages, int steps,
      long events) {
    this.finishSeconds = finishSeconds;
    this.networkBytes = networkBytes;
    this.localBytes = localBytes;
    this.messages = messages;
    this.steps = steps;
    this.events = events;
  }

  /** Time until the last rank finished, in seconds: what a caller timing its slowest rank measures. */
  public double seconds() {
    double max = 0;
    for (double f : finishSeconds) {
      max = Math.max(max, f);
    }
    return max;
  }

  public double finishSeconds(int rank) {
    return finishSeconds[rank];
  }

  /** Payload bytes {@code rank} sent to ranks on other hosts (headers not counted). */
  public long networkBytes(int rank) {
    return networkBytes[rank];
  }

  /** Payload bytes {@code rank} handed to ranks of its own host, copied or read in place. */
  public long localBytes(int rank) {
    return localBytes[rank];
  }

  /** Messages (segments and offered ranges) sent by all ranks. */
  public long messages() {
    return messages;
  }

  /** Step numbers used: one more than the highest step any rank's frames carried (0 if none was sent). */
  public int steps() {
    return steps;
  }

  /** Events the simulation processed (its own cost). */
  public long events() {
    return events;
  }

  /** Bus bandwidth in bytes per second of an all-reduce of {@code bytes} on {@code ranks} ranks: 2(N-1)/N V / t. */
  public double busBytesPerSecond(long bytes, int ranks) {
    return ranks < 2 ? 0 : 2.0 * (ranks - 1) / ranks * bytes / seconds();
  }
}
