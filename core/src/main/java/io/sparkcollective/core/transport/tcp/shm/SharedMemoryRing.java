package io.sparkcollective.core.transport.tcp.shm;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import io.sparkcollective.core.kernel.WireBuffer;
import io.sparkcollective.core.transport.Frame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/*
 * A one-way byte ring in a memory-mapped file, shared by the two endpoints of one connection when both run on
 * the same host. The sending side writes DATA payloads into it and only their headers go over the socket; the
 * receiving side lends each payload, where it lies, to the frame it delivers (no copy) and hands the space back
 * when that frame is released. The file's layout and where payloads go: RingLayout.
 *
 *   consumed (receiver)     end of the oldest payload still held: frames of one connection go to several ranks
 *                           and are released out of order, so consumed moves over the freed prefix only
 *
 * Payloads: the socket orders everything; a payload is written before its header is sent, and the receiver
 * reads it only after reading that header. Records (whole messages, RingLayout): the ring orders them
 * itself through the published word; the socket carries a wake-up only when the receiver is blocked in a
 * poll. The file is created with owner-only permissions and deleted as soon as the receiver has mapped it (or
 * when the connection closes), so nothing is left behind on a normal exit.
 */

/** A shared-memory ring carrying one connection's DATA payloads between two processes of one host. */
public final class SharedMemoryRing implements Frame.Lender {
  private static final Logger LOG = LoggerFactory.getLogger(SharedMemoryRing.class);
  private static final long MAGIC = RingLayout.MAGIC;
  private static final int TOKEN_AT = RingLayout.TOKEN_AT;
  private static final int CAPACITY_AT = RingLayout.CAPACITY_AT;
  private static final int ATTACHED_AT = RingLayout.ATTACHED_AT;
  private static final int CONSUMED_AT = RingLayout.CONSUMED_AT;
  private static final int PUBLISHED_AT = RingLayout.PUBLISHED_AT;
  private static final int STARTED_OVER_AT = RingLayout.STARTED_OVER_AT;
  private static final int PARKED_AT = RingLayout.PARKED_AT;
  private static final int SOCKET_DATA_AT = RingLayout.SOCKET_DATA_AT;
  private static final int DATA_AT = RingLayout.DATA_AT;
  private static final String PREFIX = "spark-collective-";
  private static final String SUFFIX = ".ring";
  private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Path path;
  private final MappedByteBuffer map;
  private final ByteBuffer data;
  /** The data area in little-endian order, for reading record lengths. */
  private final ByteBuffer records;
  private final long token;
  private final int capacity;
  // Sender side.
  private long head;
  /**
   * Where the sender last started over at the beginning of the data area, and the wrap it started at: until the
   * receiver frees a payload placed since, its consumed word still says the first, and the gap counts as free.
   */
  private long startedOverFrom = -1;
  private long startedOverTo = -1;
  /** A record claimed and not yet published (see {@link #claimRecord}), else -1; and the two words before it. */
  private long claimed = -1;
  private long claimStartedOverFrom;
  private long claimStartedOverTo;
  private boolean attached;
  private boolean deleted;
  // Both sides (under this object's lock): closed with its connection; unmapped once nothing reads it.
  private boolean closed;
  private boolean unmapped;
  // Receiver side. Where the next payload or record starts (its reading thread, which also calls check/take).
  private long expected;
  /** The published word as last read (reading thread). */
  private long seenPublished;
  /** The consumed word as last written (under this object's lock). */
  private long consumed;
  // Receiver side (under this object's lock): payloads received and not yet freed, in arrival order.
  private long[] heldStart = new long[64];
  private long[] heldEnd = new long[64];
  private boolean[] freed = new boolean[64];
  private int heldFirst;
  private int heldCount;
  /** Windows on the ring's memory to lend frames (each with its own buffer views, so readers never share one). */
  private final ArrayDeque<WireBuffer> windows = new ArrayDeque<>();

  private SharedMemoryRing(Path path, MappedByteBuffer map, long token, int capacity) {
    this.path = path;
    this.map = map;
    this.token = token;
    this.capacity = capacity;
    this.data = map.duplicate().position(DATA_AT).limit(DATA_AT + capacity).slice();
    this.records = data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
  }

  public Path path() {
    return path;
  }

  public long token() {
    return token;
  }

  /**
   * Creates a ring of {@code capacity} bytes in {@code dir} for this process to send through. Every page is
   * written once here, so a full file system fails this call instead of a later write into the mapping.
   */
  public static SharedMemoryRing create(Path dir, int capacity) throws IOException {
    String bad = RingLayout.checkCapacity(capacity);
    if (bad != null) {
      throw new IllegalArgumentException(bad);
    }
    long token = RANDOM.nextLong();
    Path path = dir.resolve(PREFIX + ProcessHandle.current().pid() + "-" + Long.toHexString(RANDOM.nextLong())
        + SUFFIX);
    Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 16);
      long size = RingLayout.fileBytes(capacity);
      for (long at = 0; at < size; ) {
        zeros.clear().limit((int) Math.min(zeros.capacity(), size - at));
        at += ch.write(zeros, at);
      }
      MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
      map.order(ByteOrder.nativeOrder());
      map.putLong(TOKEN_AT, token);
      map.putLong(CAPACITY_AT, capacity);
      map.putLong(0, MAGIC);
      return new SharedMemoryRing(path, map, token, capacity);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(path);
      throw e;
    }
  }

  /**
   * Maps the ring a peer offered and tells it so. The path must name a regular file in {@code dir} made by
   * {@link #create} with the same token and capacity; it is deleted once mapped. {@code socketData}: the DATA
   * messages of the connection read from the socket so far (see {@link #socketDataRead}).
   */
  public static SharedMemoryRing attach(Path dir, String name, long token, int capacity, long socketData)
      throws IOException {
    String bad = RingLayout.checkCapacity(capacity);
    if (bad != null) {
      throw new IOException("offered " + bad);
    }
    Path path = dir.resolve(name).normalize();
    if (!name.startsWith(PREFIX) || !name.endsWith(SUFFIX) || !dir.equals(path.getParent())) {
      throw new IOException("not a ring file name: " + name);
    }
    if (!Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException("no ring file " + path);
    }
    long size = RingLayout.fileBytes(capacity);
    MappedByteBuffer map;
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
        LinkOption.NOFOLLOW_LINKS)) {
      if (ch.size() != size) {
        throw new IOException("ring file " + path + " has " + ch.size() + " bytes, expected " + size);
      }
      map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
    }
    map.order(ByteOrder.nativeOrder());
    if (map.getLong(0) != MAGIC || map.getLong(TOKEN_AT) != token || map.getLong(CAPACITY_AT) != capacity) {
      throw new IOException("ring file " + path + " is not the one offered");
    }
    Files.deleteIfExists(path);
    SharedMemoryRing ring = new SharedMemoryRing(path, map, token, capacity);
    ring.deleted = true;
    LONGS.setRelease(map, SOCKET_DATA_AT, socketData);
    LONGS.setRelease(map, ATTACHED_AT, 1L);
    return ring;
  }

  /** Deletes ring files of processes that no longer run (left behind by a killed process). */
  public static void removeStale(Path dir) {
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*" + SUFFIX)) {
      for (Path f : files) {
        String name = f.getFileName().toString();
        int dash = name.indexOf('-', PREFIX.length());
        try {
          long pid = Long.parseLong(name.substring(PREFIX.length(), dash));
          if (ProcessHandle.of(pid).isEmpty()) {
            Files.deleteIfExists(f);
            LOG.debug("removed {}, left by process {}", f, pid);
          }
        } catch (RuntimeException | IOException e) {
          LOG.debug("cannot check {}: {}", f, e.toString());
        }
      }
    } catch (IOException e) {
      LOG.debug("cannot list {}: {}", dir, e.toString());
    }
  }

  // ------------------------------------------------------------------------------------------- sender

  /** True once the receiver has mapped the ring (the file is deleted then). */
  public boolean attached() {
    if (!attached && (long) LONGS.getAcquire(map, ATTACHED_AT) != 0) {
      attached = true;
      delete();
    }
    return attached;
  }

  /**
   * Copies {@code n} bytes of {@code src} from {@code index} into the ring; returns their position, or -1 if
   * the receiver has not attached or there is no room (then the payload goes over the socket).
   */
  public long put(ByteBuffer src, int index, int n) {
    if (n > capacity || !attached()) {
      return -1;
    }
    long pos = reserve(n);
    if (pos < 0) {
      return -1;
    }
    data.put((int) (pos % capacity), src, index, n);
    head = pos + n;
    return pos;
  }

  /**
   * Copies the whole message of {@code n} bytes at {@code index} of {@code src} (its first four bytes its
   * little-endian length field, {@code n - 4}) into the ring as a record and publishes it; false if the receiver
   * has not attached, there is no room, or it has not yet read all {@code socketData} DATA messages sent over
   * the socket so far (then this one goes over the socket too, behind them). After true, {@link #wakeReceiver}.
   */
  public boolean putRecord(ByteBuffer src, int index, int n, long socketData) {
    int offset = claimRecord(n, socketData);
    if (offset < 0) {
      return false;
    }
    data.put(offset, src, index, n);
    publishClaim(n);
    return true;
  }

  /**
   * Reserves room for a record of {@code n} bytes (a whole message, as {@link #putRecord} takes it) for the
   * caller to write in place: returns its offset in {@link #dataArea}, or -1 when {@link #putRecord} would
   * refuse it. Then {@link #publishClaim} or {@link #dropClaim}, before anything else goes into this ring.
   */
  public int claimRecord(int n, long socketData) {
    if (n > capacity || n <= RingLayout.RECORD_LENGTH_BYTES || !attached()
        || (long) LONGS.getAcquire(map, SOCKET_DATA_AT) != socketData) {
      return -1;
    }
    long from = startedOverFrom;
    long to = startedOverTo;
    long pos = reserve(n);
    if (pos < 0) {
      return -1;
    }
    claimed = pos;
    claimStartedOverFrom = from;
    claimStartedOverTo = to;
    return (int) (pos % capacity);
  }

  /**
   * Publishes the claimed record, whose {@code n} bytes (at most what was claimed; the first four its length
   * field, {@code n - 4}) the caller has written. After it, {@link #wakeReceiver}.
   */
  public void publishClaim(int n) {
    long pos = claimed;
    if (pos < 0) {
      throw new IllegalStateException("no record is claimed");
    }
    claimed = -1;
    long at = RingLayout.align(head);
    if (pos == startedOverTo) {
      LONGS.setRelease(map, STARTED_OVER_AT, head);
    } else if (at != pos) {
      records.putInt((int) (at % capacity), RingLayout.WRAP_MARK);
    }
    head = pos + n;
    LONGS.setVolatile(map, PUBLISHED_AT, head);
  }

  /** Gives up the claimed record: the ring is as if it had not been claimed. */
  public void dropClaim() {
    if (claimed >= 0) {
      claimed = -1;
      startedOverFrom = claimStartedOverFrom;
      startedOverTo = claimStartedOverTo;
    }
  }

  /** The data area, little-endian, from its first byte (offsets as {@link #claimRecord} returns them). */
  public ByteBuffer dataArea() {
    return records.duplicate().clear().order(ByteOrder.LITTLE_ENDIAN);
  }

  /**
   * Where {@code n} bytes go next, or -1 if they do not fit behind what the receiver holds; at the beginning of
   * the data area when {@link RingLayout#startOver} says so.
   */
  private long reserve(int n) {
    long consumed = (long) LONGS.getAcquire(map, CONSUMED_AT);
    if (consumed == startedOverFrom) {
      consumed = startedOverTo;
    }
    boolean over = RingLayout.startOver(head, n, consumed, capacity);
    long pos = RingLayout.place(head, n, capacity, over);
    if (!RingLayout.fits(pos, n, consumed >= head ? pos : consumed, capacity)) {
      return -1;
    }
    if (over) {
      startedOverFrom = head;
      startedOverTo = pos;
    }
    return pos;
  }

  /**
   * Whether the receiver was blocked in a poll when the last record was published: then this call claims the
   * wake-up (true once per block) and the caller sends it through the socket.
   */
  public boolean wakeReceiver() {
    return (long) LONGS.getVolatile(map, PARKED_AT) != 0 && LONGS.compareAndSet(map, PARKED_AT, 1L, 0L);
  }

  /**
   * The connection closed: the mapping is released as soon as no frame holds a window on it (at once on the
   * sending side, which lends none), so the memory of a lost peer's ring does not wait for a GC.
   */
  public synchronized void close() {
    closed = true;
    delete();
    if (heldCount == 0) {
      unmap();
    }
  }

  private void unmap() {
    if (!unmapped) {
      unmapped = Mappings.unmap(map);
    }
  }

  public void delete() {
    if (!deleted) {
      deleted = true;
      try {
        Files.deleteIfExists(path);
      } catch (IOException e) {
        LOG.debug("cannot delete {}: {}", path, e.toString());
      }
    }
  }

  // ----------------------------------------------------------------------------------------- receiver

  /** Where the records of a ring go: one call per record, in order. */
  public interface RecordSink {
    /**
     * The record at {@code pos} of {@code whole} bytes, its length field included, lies at {@code offset} of
     * {@code ring} (little-endian, the data area): the sink reads it there and hands it on with
     * {@link #takeRecord}. Returns why the connection must close, or null.
     */
    String record(SharedMemoryRing from, ByteBuffer ring, int offset, int whole, long pos);
  }

  /** Whether records were published that {@link #pollRecords} has not read (reading thread). */
  public boolean hasRecords() {
    return (long) LONGS.getAcquire(map, PUBLISHED_AT) != seenPublished;
  }

  /**
   * Hands every record published since the last call to {@code sink}, in order (reading thread). Returns why the
   * connection must close (the sender broke the ring's rules), or null.
   */
  public String pollRecords(RecordSink sink) {
    long published = (long) LONGS.getAcquire(map, PUBLISHED_AT);
    if (published == seenPublished) {
      return null;
    }
    long held;
    synchronized (this) {
      // What the receiver holds starts at its oldest payload; holding nothing, it has freed everything up to
      // where the sender may start over (a freed tail before either counts as free on the sender's side too).
      held = heldCount == 0 ? RingLayout.nextWrap(consumed, capacity) : heldStart[heldFirst];
    }
    String bad = RingLayout.checkPublished(seenPublished, published, held, capacity);
    if (bad != null) {
      return bad;
    }
    long startedOver = (long) LONGS.getAcquire(map, STARTED_OVER_AT);
    while (expected < published) {
      if (expected == startedOver && expected % capacity != 0) {
        expected = RingLayout.nextWrap(expected, capacity);
        continue;
      }
      long pos = RingLayout.align(expected);
      if (pos + RingLayout.RECORD_LENGTH_BYTES > published) {
        return "its shared-memory records end at " + published + ", inside the length field at " + pos;
      }
      int offset = (int) (pos % capacity);
      int length = records.getInt(offset);
      bad = RingLayout.checkRecord(pos, length, published, capacity);
      if (bad != null) {
        return bad;
      }
      if (length == RingLayout.WRAP_MARK) {
        expected = pos + capacity - offset;
        continue;
      }
      int whole = RingLayout.RECORD_LENGTH_BYTES + length;
      bad = sink.record(this, records, offset, whole, pos);
      if (bad != null) {
        return bad;
      }
      if (expected != pos + whole) {
        throw new IllegalStateException("the record at " + pos + " was not taken");
      }
    }
    seenPublished = published;
    return null;
  }

  /**
   * Takes the record of {@code whole} bytes at {@code pos} whose payload starts {@code headerBytes} into it: like
   * {@link #take} for that payload.
   */
  public void takeRecord(long pos, int whole, int headerBytes, Frame frame) {
    take(pos + headerBytes, whole - headerBytes, frame);
  }

  /** The receiver has read {@code n} DATA messages of the connection from the socket (reading thread). */
  public void socketDataRead(long n) {
    LONGS.setRelease(map, SOCKET_DATA_AT, n);
  }

  /**
   * Marks the receiver as blocked in a poll (or not): while marked, the next record published rings it through
   * the socket. Returns, after marking, whether records are already waiting (then it should not block).
   */
  public boolean park(boolean parked) {
    LONGS.setVolatile(map, PARKED_AT, parked ? 1L : 0L);
    return parked && (long) LONGS.getVolatile(map, PUBLISHED_AT) != seenPublished;
  }

  /**
   * Why a payload of {@code n} bytes at {@code pos} cannot be the next one (it must start where the previous
   * one ended, aligned, or at the next wrap), or null if it can.
   */
  public synchronized String check(long pos, int n) {
    return RingLayout.checkNext(expected, pos, n, capacity);
  }

  /**
   * Takes the payload at {@code pos} (checked by {@link #check}): lends it to {@code frame}, which frees its
   * space when released, or frees it at once if there is no frame (a payload no rank here takes).
   */
  public void take(long pos, int n, Frame frame) {
    WireBuffer window;
    synchronized (this) {
      expected = pos + n;
      if (heldCount == heldStart.length) {
        grow();
      }
      int i = (heldFirst + heldCount++) % heldStart.length;
      heldStart[i] = pos;
      heldEnd[i] = pos + n;
      freed[i] = false;
      if (frame == null) {
        giveBack(pos, null);
        return;
      }
      window = windows.pollFirst();
    }
    if (window == null) {
      window = new WireBuffer(data);
    }
    window.start((int) (pos % capacity));
    window.size(n);
    frame.lend(window, this, pos);
  }

  private void grow() {
    int m = heldStart.length;
    long[] s = new long[2 * m];
    long[] e = new long[2 * m];
    boolean[] f = new boolean[2 * m];
    for (int k = 0; k < heldCount; k++) {
      int i = (heldFirst + k) % m;
      s[k] = heldStart[i];
      e[k] = heldEnd[i];
      f[k] = freed[i];
    }
    heldStart = s;
    heldEnd = e;
    freed = f;
    heldFirst = 0;
  }

  /** The frame the payload at {@code pos} was lent to is released: its space (and what precedes it) is free. */
  @Override
  public synchronized void giveBack(long pos, WireBuffer window) {
    if (window != null) {
      windows.addFirst(window);
    }
    int m = heldStart.length;
    for (int k = 0; k < heldCount; k++) {
      int i = (heldFirst + k) % m;
      if (heldStart[i] == pos) {
        freed[i] = true;
        break;
      }
    }
    long freedTo = -1;
    while (heldCount > 0 && freed[heldFirst]) {
      freedTo = heldEnd[heldFirst];
      heldFirst = (heldFirst + 1) % m;
      heldCount--;
    }
    if (closed) {
      if (heldCount == 0) {
        unmap();
      }
    } else if (freedTo >= 0) {
      consumed = freedTo;
      LONGS.setRelease(map, CONSUMED_AT, freedTo);
    }
  }
}
