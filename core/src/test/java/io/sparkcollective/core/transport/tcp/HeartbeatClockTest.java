package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.time.NanoClock;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Heartbeats and silences of caller-driven connections on a manual clock: no test sleeps through a
 * heartbeat timeout. Two endpoints share the clock; their group is idle, so only heartbeats cross.
 */
@Timeout(60)
class HeartbeatClockTest {
  private static final long INTERVAL_MS = 1000;
  private static final long TIMEOUT_MS = 10_000;
  private static final CollectiveConfig CONFIG = CollectiveConfig.from(Map.of(
      CollectiveConfig.HEARTBEAT_INTERVAL_MS, Long.toString(INTERVAL_MS),
      CollectiveConfig.HEARTBEAT_TIMEOUT_MS, Long.toString(TIMEOUT_MS)));

  /** A clock that moves only when told. */
  private static final class ManualClock implements NanoClock {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    @Override
    public long nanoTime() {
      return now.get();
    }

    void advanceMs(long ms) {
      now.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms));
    }
  }

  private static List<Communicator> group(TcpEndpoint a, TcpEndpoint b) throws Exception {
    List<InetSocketAddress> peers = List.of(a.address(), b.address());
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<Communicator> r0 = pool.submit(() -> TcpGroup.join(a, "heartbeats", 0, peers, CONFIG));
      Future<Communicator> r1 = pool.submit(() -> TcpGroup.join(b, "heartbeats", 1, peers, CONFIG));
      return List.of(r0.get(20, TimeUnit.SECONDS), r1.get(20, TimeUnit.SECONDS));
    } finally {
      pool.shutdownNow();
    }
  }

  /** The failure rank {@code c}'s health check reports within {@code ms} of real time, or null. */
  private static CollectiveException failureWithin(Communicator c, long ms) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    while (System.nanoTime() < until) {
      try {
        c.checkHealth();
      } catch (CollectiveException e) {
        return e;
      }
      Thread.sleep(5);
    }
    return null;
  }

  @Test
  void shouldKeepAnIdleConnectionAliveWithHeartbeatsAndCloseASilentOneAtTheTimeout() throws Exception {
    ManualClock clock = new ManualClock();
    try (TcpEndpoint a = TcpEndpoint.start("127.0.0.1", 0, "s", CONFIG, clock);
        TcpEndpoint b = TcpEndpoint.start("127.0.0.1", 0, "s", CONFIG, clock)) {
      List<Communicator> g = group(a, b);
      // Real time passes, the clock does not: nothing is due, nothing fails.
      assertTrue(failureWithin(g.get(0), 500) == null, "failed without the clock moving");
      // Idle for twice the timeout, one interval at a time: heartbeats go out and keep both sides alive.
      for (long t = 0; t < 2 * TIMEOUT_MS; t += INTERVAL_MS) {
        clock.advanceMs(INTERVAL_MS);
        assertTrue(failureWithin(g.get(0), 50) == null, "failed at " + t + " ms although heartbeats flowed");
      }
      // Then past the timeout at once: no heartbeat can have been sent or read in between.
      clock.advanceMs(TIMEOUT_MS + 1);
      CollectiveException e = failureWithin(g.get(0), 5000);
      assertInstanceOf(PeerLostException.class, e, "the silent connection is closed: " + e);
      assertTrue(e.getMessage().contains("no heartbeat") || e.getMessage().contains("closed"), e.getMessage());
      CollectiveException other = failureWithin(g.get(1), 5000);
      assertInstanceOf(PeerLostException.class, other, String.valueOf(other));
      for (Communicator c : g) {
        c.close();
      }
    }
  }
}
