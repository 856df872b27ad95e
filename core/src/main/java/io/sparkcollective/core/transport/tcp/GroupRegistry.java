package io.sparkcollective.core.transport.tcp;

import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.tcp.link.Inbound;
import io.sparkcollective.core.transport.tcp.link.RateLimitedLog;
import io.sparkcollective.core.transport.tcp.link.Receiver;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The groups with ranks on one endpoint, and where each received message goes: a (group, rank) maps to its
 * {@link TcpTransport}. A message for a rank that is not registered is dropped and counted (DATA), kept a while
 * in case its rank registers soon (JOIN: ranks start at different times), or ignored (the rest).
 *
 * <p>Threads: registration by joining and leaving ranks; lookups by whoever reads a connection, on every
 * message, without locks (one immutable snapshot behind a volatile reference).
 */
final class GroupRegistry implements Inbound {
  private static final Logger LOG = LoggerFactory.getLogger(GroupRegistry.class);
  /** How long a JOIN for a rank not registered yet is kept for it (its task may start late). */
  private static final long PENDING_JOIN_TTL_NANOS = Tuning.PENDING_JOIN_TTL_NANOS;

  private final Supplier<String> addressKey;
  private final NanoClock clock;
  private final ConcurrentHashMap<Long, TcpTransport[]> groups = new ConcurrentHashMap<>();
  private final List<PendingJoin> pendingJoins = new ArrayList<>();
  private final AtomicLong rejectedFrames = new AtomicLong();
  private final AtomicLong droppedMessages = new AtomicLong();
  private final RateLimitedLog dropLog;
  private volatile GroupTable table = GroupTable.EMPTY;

  /** {@code addressKey}: the endpoint's address, for logs (known once it listens). */
  GroupRegistry(Supplier<String> addressKey, NanoClock clock) {
    this.addressKey = addressKey;
    this.clock = clock;
    this.dropLog = new RateLimitedLog(LOG, clock, Tuning.WARNINGS_PER_ADDRESS, Tuning.WARNING_INTERVAL_MS);
  }

  /**
   * Registers {@code t} and hands it the JOINs that came before it.
   *
   * @throws CollectiveUsageException if the group is registered with another size or the rank already is
   */
  void register(TcpTransport t) {
    int size = t.size();
    int rank = t.rank();
    while (true) {
      TcpTransport[] slot = groups.computeIfAbsent(t.groupId(), g -> new TcpTransport[size]);
      synchronized (slot) {
        if (groups.get(t.groupId()) != slot) {
          // The group's last rank here left between the lookup and the lock and removed this slot: a rank
          // put in it now would be found by nobody. Take the group's new slot instead.
          continue;
        }
        if (slot.length != size) {
          throw new CollectiveUsageException("group " + t.groupName() + " is registered here with " + slot.length
              + " ranks, not " + size);
        }
        if (slot[rank] != null) {
          throw new CollectiveUsageException("rank " + rank + " of group " + t.groupName()
              + " is already registered on " + addressKey.get());
        }
        slot[rank] = t;
      }
      break;
    }
    refreshTable();
    replayPendingJoins(t.groupId(), rank);
  }

  void unregister(TcpTransport t) {
    TcpTransport[] slot = groups.get(t.groupId());
    if (slot == null) {
      return;
    }
    synchronized (slot) {
      if (slot[t.rank()] == t) {
        slot[t.rank()] = null;
      }
      boolean empty = true;
      for (TcpTransport x : slot) {
        empty &= x == null;
      }
      if (empty) {
        groups.remove(t.groupId(), slot);
      }
    }
    refreshTable();
  }

  /**
   * The registered groups as parallel arrays, rebuilt when a group comes or goes, so that finding the rank a
   * frame is for (on every frame) neither boxes the 64-bit group id nor hashes. One immutable snapshot
   * behind one volatile reference, so a reader never pairs the ids of one snapshot with the slots of another.
   */
  private static final class GroupTable {
    static final GroupTable EMPTY = new GroupTable(new long[0], new TcpTransport[0][]);
    final long[] ids;
    final TcpTransport[][] slots;

    GroupTable(long[] ids, TcpTransport[][] slots) {
      this.ids = ids;
      this.slots = slots;
    }
  }

  private synchronized void refreshTable() {
    List<Map.Entry<Long, TcpTransport[]>> entries = new ArrayList<>(groups.entrySet());
    long[] ids = new long[entries.size()];
    TcpTransport[][] slots = new TcpTransport[entries.size()][];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = entries.get(i).getKey();
      slots[i] = entries.get(i).getValue();
    }
    table = new GroupTable(ids, slots);
  }

  /** The transport of {@code rank} of {@code group} if that rank is registered here, else null. */
  TcpTransport registered(long group, int rank) {
    GroupTable t = table;
    for (int i = 0; i < t.ids.length; i++) {
      if (t.ids[i] == group) {
        TcpTransport[] slot = t.slots[i];
        TcpTransport found = rank < 0 || rank >= slot.length ? null : slot[rank];
        if (found != null) {
          return found;
        }
        break;
      }
    }
    // Registered after the last refresh (or not at all; or the snapshot still holds a slot that its group's
    // last rank removed, and a new one took its place): the map has the truth.
    TcpTransport[] slot = groups.get(group);
    if (slot == null || rank < 0 || rank >= slot.length) {
      return null;
    }
    return slot[rank];
  }

  @Override
  public Receiver receiver(String remoteKey, long group, int dest) {
    TcpTransport t = registered(group, dest);
    if (t == null) {
      long n = rejectedFrames.incrementAndGet();
      if (n <= 10 || Long.bitCount(n) == 1) {
        LOG.warn("{}: dropped a frame from {} for group {} rank {}, which is not registered here (stale stage "
            + "attempt or foreign group; {} dropped so far)", addressKey.get(), remoteKey, Long.toHexString(group),
            dest, n);
      }
      return null;
    }
    return t.receiver();
  }

  /** Frames dropped because no rank of their group is registered here (stale or foreign groups). */
  long rejectedFrames() {
    return rejectedFrames.get();
  }

  // ---------------------------------------------------------------------------------- received messages

  @Override
  public void onJoin(String remoteKey, long group, int source, int dest, int size) {
    TcpTransport t = registered(group, dest);
    if (t == null) {
      synchronized (pendingJoins) {
        long now = clock.nanoTime();
        pendingJoins.removeIf(p -> now - p.atNanos > PENDING_JOIN_TTL_NANOS);
        if (pendingJoins.size() >= Tuning.MAX_PENDING_JOINS) {
          pendingJoins.remove(0);
        }
        pendingJoins.add(new PendingJoin(remoteKey, group, source, dest, size, now));
      }
      // The group may have registered between the lookup and the add.
      t = registered(group, dest);
      if (t == null) {
        return;
      }
      replayPendingJoins(group, dest);
      return;
    }
    t.onJoin(remoteKey, source, size);
  }

  private void replayPendingJoins(long group, int rank) {
    List<PendingJoin> mine = new ArrayList<>();
    synchronized (pendingJoins) {
      for (Iterator<PendingJoin> it = pendingJoins.iterator(); it.hasNext(); ) {
        PendingJoin p = it.next();
        if (p.group == group && p.dest == rank) {
          mine.add(p);
          it.remove();
        }
      }
    }
    TcpTransport t = registered(group, rank);
    if (t == null) {
      return; // the rank left again before its early JOINs could be handed over: nobody waits for them
    }
    for (PendingJoin p : mine) {
      t.onJoin(p.remoteKey, p.source, p.size);
    }
  }

  @Override
  public void onJoinRefused(String remoteKey, long group, int source, int dest, String reason) {
    TcpTransport t = registered(group, dest);
    if (t != null && admitted(t, remoteKey, "REFUSE_JOIN", source)) {
      t.onJoinRefused(source, reason);
    }
  }

  @Override
  public void onAbort(String remoteKey, long group, int source, int dest, int origin, String reason) {
    TcpTransport t = registered(group, dest);
    if (t != null && admitted(t, remoteKey, "ABORT", source)) {
      t.onAbort(source, origin, reason);
    }
  }

  @Override
  public void onLeave(String remoteKey, long group, int source, int dest, int copies) {
    TcpTransport t = registered(group, dest);
    if (t != null && admitted(t, remoteKey, "LEAVE", source)) {
      t.onLeave(source, copies);
    }
  }

  /** Whether {@code remoteKey} may speak for rank {@code source} of {@code t}'s group; if not, counts the drop. */
  private boolean admitted(TcpTransport t, String remoteKey, String what, int source) {
    if (t.speaksFor(remoteKey, source)) {
      return true;
    }
    dropped(remoteKey, what, t.groupId(), source, t.rank());
    return false;
  }

  /**
   * A message from {@code remoteKey} claimed to come from rank {@code source} of {@code group}, which that
   * endpoint does not host: dropped, counted and logged (rate-limited); the group is not affected.
   */
  void dropped(String remoteKey, String what, long group, int source, int dest) {
    droppedMessages.incrementAndGet();
    dropLog.warn(remoteKey, "{}: dropped {} from {} for group {} rank {}: it claims rank {}, which that endpoint "
        + "does not host", addressKey.get(), what, remoteKey, Long.toHexString(group), dest, source);
  }

  long droppedMessages() {
    return droppedMessages.get();
  }

  /**
   * A connection carrying {@code remoteKey}'s frames closed ({@code othersOpen}: another connection to that
   * endpoint is still open): every rank here with a peer there hears of it.
   */
  void endpointLost(String remoteKey, String why, boolean othersOpen) {
    for (TcpTransport[] slot : groups.values()) {
      for (TcpTransport t : slot.clone()) {
        if (t != null) {
          t.endpointLost(remoteKey, why, othersOpen);
        }
      }
    }
  }

  /** Closes every registered rank (the endpoint is closing). */
  void closeAll() {
    for (TcpTransport[] slot : groups.values()) {
      for (TcpTransport t : slot.clone()) {
        if (t != null) {
          t.close();
        }
      }
    }
  }

  private static final class PendingJoin {
    final String remoteKey;
    final long group;
    final int source;
    final int dest;
    final int size;
    final long atNanos;

    PendingJoin(String remoteKey, long group, int source, int dest, int size, long atNanos) {
      this.remoteKey = remoteKey;
      this.group = group;
      this.source = source;
      this.dest = dest;
      this.size = size;
      this.atNanos = atNanos;
    }
  }
}
