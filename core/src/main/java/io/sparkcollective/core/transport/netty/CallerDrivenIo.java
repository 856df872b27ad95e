package io.sparkcollective.core.transport.netty;

import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.Inbox;
import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.file.Files;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Caller-driven progress for an endpoint's plain TCP connections ({@link DirectLink}s): the thread that waits
 * for a frame reads the sockets itself, so a message costs the receiver no thread hand-off at all while it
 * spins and one wake-up (its own, from the socket poll) once it blocks; senders write to the socket
 * directly.
 *
 * <p>One thread at a time drives (holds the token): it polls every connection of the endpoint, hands each
 * message to the rank it is for (waking that rank's thread if it is another one) and flushes writes the
 * socket could not take at once. A waiting thread that finds the token taken spins, then parks until a frame
 * of its own arrives or the token is released. When no application thread has driven for a while (between
 * operations, idle groups), the endpoint's progress thread takes over, so aborts, departures and lost
 * connections are still noticed at once; it also sends heartbeats and closes silent connections.
 */
final class CallerDrivenIo implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CallerDrivenIo.class);
  /** Longest single block in a socket poll (see {@link Tuning#POLL_SLICE_NANOS}). */
  private static final long SLICE_NANOS = Tuning.POLL_SLICE_NANOS;
  /** How long after an application thread last drove the progress thread stays out of the way. */
  private static final long BACKOFF_NANOS = Tuning.PROGRESS_BACKOFF_NANOS;

  private final NettyEndpoint endpoint;
  private final NanoClock clock;
  private final Selector selector;
  private final long spinNanos;
  private final long heartbeatNanos;
  private final long silenceNanos;
  private final AtomicBoolean token = new AtomicBoolean();
  private final Set<DirectLink> links = ConcurrentHashMap.newKeySet();
  private final Consumer<SelectionKey> onReady = CallerDrivenIo::ready;
  private final Runnable wakeSelector;
  private final BooleanSupplier tokenFree = () -> !token.get();
  private final Thread progress;
  /** Threads parked while another drives; released when the token is. */
  private final Thread[] parked = new Thread[64];
  private volatile int parkedCount;
  private volatile long callerActiveNanos;
  private volatile boolean progressSelecting;
  private volatile boolean closed;
  private final LongAdder sharedPayloads = new LongAdder();

  CallerDrivenIo(NettyEndpoint endpoint) throws IOException {
    this.endpoint = endpoint;
    this.clock = endpoint.clock();
    this.selector = Selector.open();
    this.wakeSelector = selector::wakeup;
    this.spinNanos = TimeUnit.MICROSECONDS.toNanos(endpoint.config().spinMicros());
    this.heartbeatNanos = TimeUnit.MILLISECONDS.toNanos(endpoint.config().heartbeatIntervalMs());
    this.silenceNanos = TimeUnit.MILLISECONDS.toNanos(endpoint.config().heartbeatTimeoutMs());
    // An I/O thread: it never blocks on dialling (see NettyEndpoint#write).
    this.progress = new IoThread(this::progressLoop, "collective-io-progress");
    progress.start();
    if (endpoint.config().sharedMemoryBytes() > 0 && Files.isDirectory(endpoint.config().sharedMemoryDir())) {
      SharedMemoryRing.removeStale(endpoint.config().sharedMemoryDir());
    }
  }

  NanoClock clock() {
    return clock;
  }

  NettyEndpoint endpoint() {
    return endpoint;
  }

  /** Starts driving {@code socket} (authenticated, non-blocking, no longer Netty's). */
  DirectLink adopt(java.nio.channels.SocketChannel socket, String remoteKey, boolean outbound) throws IOException {
    DirectLink link = new DirectLink(this, socket, remoteKey, outbound);
    link.register(selector);
    links.add(link);
    selector.wakeup();
    link.offerSharedMemory();
    return link;
  }

  /** A payload arrived through a shared-memory ring. */
  void countShared() {
    sharedPayloads.increment();
  }

  /** Payloads received through shared-memory rings so far. */
  long sharedPayloads() {
    return sharedPayloads.sum();
  }

  void forget(DirectLink link) {
    links.remove(link);
  }

  /** A writer queued bytes the socket would not take: make a blocked poll watch for writability. */
  void writeInterestChanged() {
    if (token.get()) {
      selector.wakeup();
    }
  }

  // ------------------------------------------------------------------------------------------ waiting

  /** {@link io.sparkcollective.core.transport.Transport#receive}, driving the sockets while it waits. */
  Frame receive(Inbox inbox, int source, int stream, long seq, long deadline) {
    long spinUntil = 0;
    boolean spinStarted = false;
    while (true) {
      Frame f = inbox.poll(source, stream, seq);
      if (f != null) {
        return f;
      }
      if (Thread.currentThread().isInterrupted()) {
        // A socket poll returns at once while the thread is interrupted: leave instead of spinning on it.
        throw new CollectiveCancelledException("interrupted while waiting for a frame from rank " + source);
      }
      long now = clock.nanoTime();
      if (now - deadline >= 0) {
        return null;
      }
      if (!spinStarted) {
        spinStarted = true;
        spinUntil = now + spinNanos;
      }
      callerActiveNanos = now;
      boolean spinning = now - spinUntil < 0;
      if (tryAcquire()) {
        try {
          if (spinning) {
            if (selector.selectNow(onReady) == 0) {
              // Nothing yet: let another runnable thread (a peer process on a busy core) go first.
              Thread.yield();
            }
          } else {
            inbox.blockedElsewhere(wakeSelector);
            try {
              Frame g = inbox.poll(source, stream, seq);
              if (g != null) {
                return g;
              }
              // Nothing yet: block in the poll; a frame from a rank of this process, or a failure, wakes it.
              selector.select(onReady, Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.min(deadline - now,
                  SLICE_NANOS))));
            } finally {
              inbox.unblocked();
            }
          }
        } catch (IOException e) {
          throw new CollectiveException("socket poll failed at endpoint " + endpoint.addressKey() + ": " + e, e);
        } catch (java.nio.channels.ClosedSelectorException e) {
          throw new CollectiveException("endpoint " + endpoint.addressKey() + " is closed", e);
        } finally {
          release();
        }
      } else if (spinning) {
        if (progressSelecting) {
          selector.wakeup();
        }
        Thread.yield();
      } else {
        if (progressSelecting) {
          selector.wakeup();
        }
        parkedUntilHandover(inbox, source, stream, seq, Math.min(deadline, now + SLICE_NANOS));
      }
    }
  }

  private void parkedUntilHandover(Inbox inbox, int source, int stream, long seq, long until) {
    Thread me = Thread.currentThread();
    if (!addParked(me)) {
      // More parked threads than slots: wait a short while instead of being handed the token.
      LockSupport.parkNanos(this, TimeUnit.MICROSECONDS.toNanos(100));
      return;
    }
    try {
      inbox.awaitDelivery(source, stream, seq, until, tokenFree);
    } finally {
      removeParked(me);
    }
  }

  private synchronized boolean addParked(Thread t) {
    int n = parkedCount;
    if (n == parked.length) {
      return false;
    }
    parked[n] = t;
    parkedCount = n + 1;
    return true;
  }

  private synchronized void removeParked(Thread t) {
    int n = parkedCount;
    for (int i = 0; i < n; i++) {
      if (parked[i] == t) {
        parked[i] = parked[n - 1];
        parked[n - 1] = null;
        parkedCount = n - 1;
        return;
      }
    }
  }

  private synchronized void unparkAll() {
    for (int i = 0; i < parkedCount; i++) {
      LockSupport.unpark(parked[i]);
    }
  }

  private boolean tryAcquire() {
    return !token.get() && token.compareAndSet(false, true);
  }

  private void release() {
    token.set(false);
    if (parkedCount > 0) {
      unparkAll();
    }
  }

  private static void ready(SelectionKey key) {
    DirectLink link = (DirectLink) key.attachment();
    if (!key.isValid()) {
      return;
    }
    int ops = key.readyOps();
    if ((ops & SelectionKey.OP_WRITE) != 0) {
      link.flush();
    }
    if ((ops & SelectionKey.OP_READ) != 0) {
      link.readAvailable();
    }
  }

  // -------------------------------------------------------------------------------- progress thread

  private void progressLoop() {
    long nextCheck = clock.nanoTime();
    while (!closed) {
      long now = clock.nanoTime();
      if (now - nextCheck >= 0) {
        maintain(now);
        nextCheck = now + Math.min(heartbeatNanos, SLICE_NANOS * 10);
      }
      // Announced before the token is taken, so a caller that finds it taken always wakes the poll below.
      progressSelecting = true;
      if (now - callerActiveNanos < BACKOFF_NANOS || !tryAcquire()) {
        progressSelecting = false;
        LockSupport.parkNanos(this, BACKOFF_NANOS);
        continue;
      }
      try {
        if (clock.nanoTime() - callerActiveNanos >= BACKOFF_NANOS) {
          selector.select(onReady, Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.max(0, nextCheck - now))));
        }
      } catch (IOException | RuntimeException e) {
        if (!closed) {
          LOG.warn("{}: progress thread: {}", endpoint.addressKey(), e.toString(), e);
        }
      } finally {
        progressSelecting = false;
        release();
      }
    }
  }

  /** Heartbeats on connections that sent nothing lately; closes those that have been silent too long. */
  private void maintain(long now) {
    for (DirectLink link : links) {
      if (now - link.lastReadNanos() > silenceNanos) {
        String why = "nothing received for " + endpoint.config().heartbeatTimeoutMs() + " ms (no heartbeat)";
        LOG.warn("{}: {} from {}; closing the connection", endpoint.addressKey(), why, link.remoteKey());
        link.fail(why);
      } else if (now - link.lastWriteNanos() >= heartbeatNanos) {
        link.heartbeat();
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    selector.wakeup();
    LockSupport.unpark(progress);
    try {
      progress.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (DirectLink link : links) {
      link.close();
    }
    try {
      selector.close();
    } catch (IOException e) {
      LOG.debug("closing the selector", e);
    }
  }
}
