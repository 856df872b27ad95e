package io.sparkcollective.core.transport.tcp.link;

import io.sparkcollective.core.time.NanoClock;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;

/**
 * Warnings about what remote parties did (refused connections, dropped messages), at most a few per remote
 * address and interval: the first ones are logged, the rest counted and summed up in the next line that is
 * logged for that address (or dropped with it once the address has been quiet for a whole interval), so a
 * flood of bad connections cannot flood the log. Bounded: at most {@link #MAX_KEYS} addresses are tracked.
 */
public final class RateLimitedLog {
  /** Addresses tracked at once; past that the oldest intervals are forgotten first. */
  public static final int MAX_KEYS = 1024;

  private final Logger log;
  private final NanoClock clock;
  private final int perInterval;
  private final long intervalNanos;
  private final Map<String, Window> windows = new HashMap<>();

  private static final class Window {
    long startNanos;
    int logged;
    long suppressed;
  }

  /** At most {@code perInterval} lines per address every {@code intervalMs}. */
  public RateLimitedLog(Logger log, NanoClock clock, int perInterval, long intervalMs) {
    this.log = log;
    this.clock = clock;
    this.perInterval = perInterval;
    this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMs);
  }

  /**
   * Logs {@code format} with {@code args} at WARN if {@code address} has not used up its lines for this interval;
   * returns whether it did. Peer-supplied arguments must be escaped by the caller ({@link PeerText}).
   */
  public boolean warn(String address, String format, Object... args) {
    long suppressedBefore;
    synchronized (windows) {
      long now = clock.nanoTime();
      Window w = windows.get(address);
      if (w == null || now - w.startNanos >= intervalNanos) {
        if (w == null) {
          if (windows.size() >= MAX_KEYS) {
            evict(now);
          }
          w = new Window();
          windows.put(address, w);
        }
        suppressedBefore = w.suppressed;
        w.startNanos = now;
        w.logged = 0;
        w.suppressed = 0;
      } else {
        suppressedBefore = 0;
      }
      if (w.logged >= perInterval) {
        w.suppressed++;
        return false;
      }
      w.logged++;
    }
    log.warn(format, args);
    if (suppressedBefore > 0) {
      log.warn("... and {} more like it from {} in the {} ms before", suppressedBefore, address,
          TimeUnit.NANOSECONDS.toMillis(intervalNanos));
    }
    return true;
  }

  /** The host of an endpoint name {@code host:port} (limits count per host, not per connection). */
  public static String host(String endpoint) {
    int colon = endpoint.lastIndexOf(':');
    return colon > 0 ? endpoint.substring(0, colon) : endpoint;
  }

  /** Lines not logged so far for {@code address} in its current interval. */
  public long suppressed(String address) {
    synchronized (windows) {
      Window w = windows.get(address);
      return w == null ? 0 : w.suppressed;
    }
  }

  private void evict(long now) {
    Iterator<Map.Entry<String, Window>> it = windows.entrySet().iterator();
    while (it.hasNext()) {
      if (now - it.next().getValue().startNanos >= intervalNanos) {
        it.remove();
      }
    }
    if (windows.size() >= MAX_KEYS) {
      windows.clear();
    }
  }
}
