package io.sparkcollective.core.time;

/**
 * Monotonic time source for deadlines and heartbeats. Injected wherever time is computed so tests can
 * drive failure detection with a manual clock (HeartbeatClockTest runs an endpoint's heartbeats and silences
 * on one).
 */
@FunctionalInterface
public interface NanoClock {
  /** The JVM's monotonic clock. */
  NanoClock SYSTEM = System::nanoTime;

  long nanoTime();
}
