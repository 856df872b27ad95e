package io.sparkcollective.core.transport.tcp.direct;

import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.FramePool;
import io.sparkcollective.core.transport.Inbox;
import io.sparkcollective.core.transport.tcp.link.Inbound;
import io.sparkcollective.core.transport.tcp.link.IoThread;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkKeys;
import io.sparkcollective.core.transport.tcp.link.LinkListener;
import io.sparkcollective.core.transport.tcp.link.RateLimitedLog;
import io.sparkcollective.core.transport.tcp.link.SocketAdopter;
import io.sparkcollective.core.transport.tcp.shm.SharedMemoryRing;
import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.file.Files;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;
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
 * of its own arrives or the token is released (the phases of waiting: {@link IdleStrategy}). When no
 * application thread has driven for a while (between operations, idle groups), the endpoint's progress
 * thread takes over, so aborts, departures and lost connections are still noticed at once; it also sends
 * heartbeats and closes silent connections.
 *
 * <p>Connections from endpoints of this host carry their DATA as records in shared-memory rings: the driver
 * looks at every ring on each turn (one memory load each) and polls the sockets less often while every
 * inbound connection has a ring; before it blocks in a poll it marks the rings, so a sender rings it through
 * the socket.
 */
public final class CallerDrivenIo implements SocketAdopter, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CallerDrivenIo.class);
  /** Longest single block in a socket poll (see {@link Tuning#POLL_SLICE_NANOS}). */
  private static final long SLICE_NANOS = Tuning.POLL_SLICE_NANOS;
  /** How long after an application thread last drove the progress thread stays out of the way. */
  private static final long BACKOFF_NANOS = Tuning.PROGRESS_BACKOFF_NANOS;
  /** The same while an application thread is inside an operation. */
  private static final long BUSY_BACKOFF_NANOS = Tuning.PROGRESS_BACKOFF_IN_OPERATION_NANOS;
  /** Longest gap between two socket polls of a spinning driver while every inbound connection has a ring. */
  private static final long RING_SELECT_NANOS = Tuning.RING_SELECT_INTERVAL_NANOS;
  private static final DirectLink[] NO_LINKS = new DirectLink[0];

  private final CollectiveConfig config;
  private final NanoClock clock;
  private final FramePool pool;
  private final Supplier<String> addressKey;
  private final Inbound inbound;
  private final LinkListener listener;
  private final Selector selector;
  private final IdleStrategy idle;
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
  /** Application threads inside an operation on this endpoint (see {@link #operationBegins}). */
  private final AtomicInteger inOperation = new AtomicInteger();
  private volatile boolean progressSelecting;
  private volatile boolean closed;
  private final LongAdder sharedPayloads = new LongAdder();
  private final LongAdder ringWakeups = new LongAdder();
  private final LongAdder claimedPayloads = new LongAdder();
  private final LongAdder writtenFrom = new LongAdder();
  private final LongAdder spilled = new LongAdder();
  private final LongAdder readIntoPosted = new LongAdder();
  private final LongAdder reclaimed = new LongAdder();
  private final LongAdder progressReadies = new LongAdder();
  private final LongAdder emptyReads = new LongAdder();
  private final LongAdder unpolledReads = new LongAdder();
  /** Connections with writes queued for the socket's writability (only the poll flushes them). */
  private final AtomicInteger queuedWriters = new AtomicInteger();
  /** Connections whose DATA comes as records through the peer's ring (copy on write, under this object's lock). */
  private volatile DirectLink[] ringLinks = NO_LINKS;
  /** Connections the peer's frames may come through: inbound ones, and outbound ones a peer may send over too. */
  private int inboundLinks;
  /** Every connection frames come through has a ring: the sockets carry only control messages and wake-ups. */
  private volatile boolean ringsOnly;
  /** When the driver last polled the sockets (driving thread). */
  private long lastSelectNanos;
  /** Protocol breaches of peers, rate-limited per remote host. */
  private final RateLimitedLog breachLog;

  /**
   * Caller-driven I/O for the endpoint at {@code addressKey} (known once it listens) with {@code config}:
   * received messages go to {@code inbound}, closed links are reported to {@code listener}, payloads are read
   * into frames of {@code pool}; deadlines, heartbeats and silences are measured on {@code clock}.
   */
  public CallerDrivenIo(CollectiveConfig config, NanoClock clock, FramePool pool, Supplier<String> addressKey,
      Inbound inbound, LinkListener listener) throws IOException {
    this.config = config;
    this.clock = clock;
    this.pool = pool;
    this.addressKey = addressKey;
    this.inbound = inbound;
    this.listener = listener;
    this.breachLog = new RateLimitedLog(LoggerFactory.getLogger(DirectLink.class), clock, Tuning.WARNINGS_PER_ADDRESS,
        Tuning.WARNING_INTERVAL_MS);
    this.selector = Selector.open();
    this.wakeSelector = selector::wakeup;
    this.idle = new IdleStrategy(Tuning.SPIN_POLLS, TimeUnit.MICROSECONDS.toNanos(config.spinMicros()), SLICE_NANOS);
    this.heartbeatNanos = TimeUnit.MILLISECONDS.toNanos(config.heartbeatIntervalMs());
    this.silenceNanos = TimeUnit.MILLISECONDS.toNanos(config.heartbeatTimeoutMs());
    // An I/O thread: it never blocks on dialling.
    this.progress = new IoThread(this::progressLoop, "collective-io-progress");
    progress.start();
    if (config.sharedMemoryBytes() > 0 && Files.isDirectory(config.sharedMemoryDir())) {
      SharedMemoryRing.removeStale(config.sharedMemoryDir());
    }
  }

  NanoClock clock() {
    return clock;
  }

  CollectiveConfig config() {
    return config;
  }

  FramePool pool() {
    return pool;
  }

  String addressKey() {
    return addressKey.get();
  }

  Inbound inbound() {
    return inbound;
  }

  LinkListener listener() {
    return listener;
  }

  RateLimitedLog breachLog() {
    return breachLog;
  }

  /** Starts driving {@code socket} (authenticated, non-blocking, no longer Netty's). */
  @Override
  public Link adopt(java.nio.channels.SocketChannel socket, String remoteKey, boolean outbound, LinkKeys keys)
      throws IOException {
    DirectLink link = new DirectLink(this, socket, remoteKey, outbound, keys);
    if (!outbound) {
      // Before anything is read from it: the peer's first message (its JOIN) then finds the connection known.
      listener.heard(link, remoteKey);
    }
    link.register(selector);
    links.add(link);
    if (!outbound || link.twoWay()) {
      synchronized (this) {
        inboundLinks++;
        recountRings();
      }
    }
    selector.wakeup();
    link.offerSharedMemory();
    return link;
  }

  /** A payload arrived through a shared-memory ring. */
  void countShared() {
    sharedPayloads.increment();
  }

  /**
   * Connections the progress thread found ready (to read, or to take queued writes) in its polls so far: work it
   * did instead of an application thread, each message it read handed across threads.
   */
  public long progressReadies() {
    return progressReadies.sum();
  }

  /** A read of a connection's socket found nothing there. */
  void countEmptyRead() {
    emptyReads.increment();
  }

  /**
   * Socket reads so far that found nothing: each a system call spent to learn it. A connection's socket is read
   * when the poll reports it ready and until a read comes back short, so these stay rare.
   */
  public long emptyReads() {
    return emptyReads.sum();
  }

  /**
   * Reads so far by a waiting thread of the connection its frame comes through, without a poll first, that found
   * something there (see {@link #receive}).
   */
  public long unpolledReads() {
    return unpolledReads.sum();
  }

  /** Payloads received through shared-memory rings so far. */
  public long sharedPayloads() {
    return sharedPayloads.sum();
  }

  /** A sender rang: records wait in its ring and a thread here was blocked in the poll. */
  void countWakeup() {
    ringWakeups.increment();
  }

  /** Wake-ups rung by senders into shared-memory rings so far. */
  public long ringWakeups() {
    return ringWakeups.sum();
  }

  /** A DATA message whose payload the engine wrote straight into a peer's ring was published. */
  void countClaimed() {
    claimedPayloads.increment();
  }

  /** DATA messages sent so far whose payload the engine wrote straight into a peer's ring. */
  public long claimedPayloads() {
    return claimedPayloads.sum();
  }

  /** A DATA message went out in a gathering write from its sender's memory ({@link DirectLink#writeFrom}). */
  void countWrittenFrom() {
    writtenFrom.increment();
  }

  /** DATA messages sent so far straight from their sender's memory, without a copy into a frame first. */
  public long writtenFrom() {
    return writtenFrom.sum();
  }

  /** Of those, the socket did not take one whole: its rest was copied into a frame and queued. */
  void countSpilled() {
    spilled.increment();
  }

  /** Messages sent from their sender's memory whose rest had to be copied and queued (the socket was full). */
  public long spilled() {
    return spilled.sum();
  }

  /** A DATA payload is read from the socket into memory its rank offered for it (its vector). */
  void countReadIntoPosted() {
    readIntoPosted.increment();
  }

  /** DATA payloads read from sockets straight into memory their ranks offered, without a copy out of a frame. */
  public long readIntoPosted() {
    return readIntoPosted.sum();
  }

  /** A rank withdrew offered memory while its payload was being read there: the rest went into a frame. */
  void countReclaimed() {
    reclaimed.increment();
  }

  /** Payloads moved out of offered memory part-read, because their rank withdrew the offer (it failed meanwhile). */
  public long reclaimed() {
    return reclaimed.sum();
  }

  void forget(DirectLink link) {
    if (links.remove(link) && (!link.outbound() || link.twoWay())) {
      synchronized (this) {
        inboundLinks--;
        recountRings();
      }
    }
  }

  /** Whether every inbound connection has a ring now (under this object's lock). */
  private void recountRings() {
    ringsOnly = inboundLinks == ringLinks.length;
  }

  /** {@code link}'s DATA comes through its peer's ring from now on. */
  synchronized void ringAttached(DirectLink link) {
    DirectLink[] old = ringLinks;
    DirectLink[] now = java.util.Arrays.copyOf(old, old.length + 1);
    now[old.length] = link;
    ringLinks = now;
    recountRings();
  }

  /** {@code link}'s ring is closed (with the connection). */
  synchronized void ringClosed(DirectLink link) {
    DirectLink[] old = ringLinks;
    for (int i = 0; i < old.length; i++) {
      if (old[i] == link) {
        DirectLink[] now = new DirectLink[old.length - 1];
        System.arraycopy(old, 0, now, 0, i);
        System.arraycopy(old, i + 1, now, i, old.length - i - 1);
        ringLinks = now;
        recountRings();
        return;
      }
    }
  }

  /** Delivers what waits in the rings (driving thread). */
  private void pollRings() {
    for (DirectLink link : ringLinks) {
      link.readRing();
    }
  }

  /**
   * Marks every ring as watched by a thread about to block in a socket poll (or unmarks them); true if records
   * wait already (then it must not block).
   */
  private boolean parkRings(boolean parked) {
    boolean waiting = false;
    for (DirectLink link : ringLinks) {
      waiting |= link.parkRing(parked);
    }
    return waiting;
  }

  /** Blocks in the socket poll for at most {@code millis}, rung by senders into the rings meanwhile. */
  private int blockingSelect(long millis) throws IOException {
    int ready = 0;
    try {
      if (!parkRings(true)) {
        ready = selector.select(onReady, millis);
        lastSelectNanos = clock.nanoTime();
      }
    } finally {
      parkRings(false);
    }
    pollRings();
    return ready;
  }

  /**
   * An application thread starts an operation: until it ends, the progress thread takes the sockets over only
   * after {@link Tuning#PROGRESS_BACKOFF_IN_OPERATION_NANOS} without a caller driving, instead of
   * {@link Tuning#PROGRESS_BACKOFF_NANOS}.
   */
  public void operationBegins() {
    callerActiveNanos = clock.nanoTime();
    inOperation.incrementAndGet();
    if (progressSelecting) {
      // Out of its poll now rather than after the caller's first frame has gone through it.
      selector.wakeup();
    }
  }

  /** The operation of {@link #operationBegins} ended. */
  public void operationEnds() {
    callerActiveNanos = clock.nanoTime();
    inOperation.decrementAndGet();
  }

  /** How long after a caller last drove the progress thread stays out of the way, as things stand. */
  private long backoffNanos() {
    return inOperation.get() > 0 ? BUSY_BACKOFF_NANOS : BACKOFF_NANOS;
  }

  /** A connection queued bytes the socket would not take ({@code +1}) or flushed or dropped them all ({@code -1}). */
  void writesQueued(int delta) {
    queuedWriters.addAndGet(delta);
  }

  /** A writer queued bytes the socket would not take: make a blocked poll watch for writability. */
  void writeInterestChanged() {
    if (token.get()) {
      selector.wakeup();
    }
  }

  /**
   * Whether this endpoint's connections to endpoints of its host offer shared-memory rings (caller-driven
   * connections are plain TCP: with TLS there is no CallerDrivenIo).
   */
  public boolean offersRings() {
    return config.sharedMemoryBytes() > 0 && Files.isDirectory(config.sharedMemoryDir());
  }

  /** Whether {@code a} is an address of this host (loopback, or one of its interfaces'). */
  public static boolean onThisHost(InetAddress a) {
    try {
      return a.isLoopbackAddress() || NetworkInterface.getByInetAddress(a) != null;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  // ------------------------------------------------------------------------------------------ waiting

  /**
   * {@link io.sparkcollective.core.transport.Transport#receive}, driving the sockets while it waits;
   * {@code route} is the connection {@code source}'s frames came through last (null if unknown).
   *
   * <p>While it spins, a thread whose frame comes through a socket it knows reads that socket straight away
   * instead of polling first: when the frame is there, that spares the poll's system call on the reply's path.
   * Every {@link Tuning#DIRECT_READS_PER_POLL}th turn polls all connections (heartbeats, notices, other
   * ranks' frames), and so does every turn while a connection waits to flush queued writes.
   */
  public Frame receive(Inbox inbox, int source, int stream, long seq, long deadline, Link route) {
    DirectLink direct = route instanceof DirectLink && ((DirectLink) route).io() == this ? (DirectLink) route : null;
    long start = clock.nanoTime();
    int polls = 0;
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
      callerActiveNanos = now;
      IdleStrategy.Phase phase = idle.phase(polls++, now - start);
      if (tryAcquire()) {
        try {
          if (phase != IdleStrategy.Phase.PARK) {
            if (ringLinks.length > 0) {
              // Without rings (other hosts, shared memory off) the turn is the socket poll alone.
              pollRings();
              Frame g = inbox.poll(source, stream, seq);
              if (g != null) {
                return g;
              }
            }
            int selected = 0;
            if (direct != null && ringLinks.length == 0 && queuedWriters.get() == 0
                && polls % Tuning.DIRECT_READS_PER_POLL != 0) {
              if (direct.tryRead()) {
                unpolledReads.increment();
                selected = 1;
              }
            } else if (!ringsOnly || now - lastSelectNanos >= RING_SELECT_NANOS) {
              lastSelectNanos = now;
              selected = selector.selectNow(onReady);
            }
            if (selected == 0) {
              // Nothing yet: on a busy core, let another runnable thread (a peer process) go first.
              idle.pause(phase);
            }
          } else {
            inbox.blockedElsewhere(wakeSelector);
            try {
              Frame g = inbox.poll(source, stream, seq);
              if (g != null) {
                return g;
              }
              // Nothing yet: block in the poll; a frame from a rank of this process, or a failure, wakes it.
              blockingSelect(Math.max(1, TimeUnit.NANOSECONDS.toMillis(idle.parkNanos(deadline - now))));
            } finally {
              inbox.unblocked();
            }
          }
        } catch (IOException e) {
          throw new CollectiveException("socket poll failed at endpoint " + addressKey() + ": " + e, e);
        } catch (java.nio.channels.ClosedSelectorException e) {
          throw new CollectiveException("endpoint " + addressKey() + " is closed", e);
        } finally {
          release();
        }
      } else {
        if (progressSelecting) {
          selector.wakeup();
        }
        if (phase != IdleStrategy.Phase.PARK) {
          idle.pause(phase);
        } else {
          parkedUntilHandover(inbox, source, stream, seq, now + idle.parkNanos(deadline - now));
        }
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
      if (now - callerActiveNanos < backoffNanos() || !tryAcquire()) {
        progressSelecting = false;
        LockSupport.parkNanos(this, BACKOFF_NANOS);
        continue;
      }
      try {
        if (clock.nanoTime() - callerActiveNanos >= backoffNanos()) {
          progressReadies.add(blockingSelect(Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.max(0, nextCheck - now)))));
        }
      } catch (IOException | RuntimeException e) {
        if (!closed) {
          LOG.warn("{}: progress thread: {}", addressKey(), e.toString(), e);
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
        String why = "nothing received for " + config.heartbeatTimeoutMs() + " ms (no heartbeat)";
        LOG.warn("{}: {} from {}; closing the connection", addressKey(), why, link.remoteKey());
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
