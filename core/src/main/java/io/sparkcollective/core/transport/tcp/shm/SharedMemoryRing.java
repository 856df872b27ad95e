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
 * The socket orders everything else: a payload is written before its header is sent, and the receiver reads
 * it only after reading that header. The file is created with owner-only permissions and deleted as soon as
 * the receiver has mapped it (or when the connection closes), so nothing is left behind on a normal exit.
 */

/** A shared-memory ring carrying one connection's DATA payloads between two processes of one host. */
public final class SharedMemoryRing implements Frame.Lender {
  private static final Logger LOG = LoggerFactory.getLogger(SharedMemoryRing.class);
  private static final long MAGIC = RingLayout.MAGIC;
  private static final int TOKEN_AT = RingLayout.TOKEN_AT;
  private static final int CAPACITY_AT = RingLayout.CAPACITY_AT;
  private static final int ATTACHED_AT = RingLayout.ATTACHED_AT;
  private static final int CONSUMED_AT = RingLayout.CONSUMED_AT;
  private static final int DATA_AT = RingLayout.DATA_AT;
  private static final String PREFIX = "spark-collective-";
  private static final String SUFFIX = ".ring";
  private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Path path;
  private final MappedByteBuffer map;
  private final ByteBuffer data;
  private final long token;
  private final int capacity;
  // Sender side.
  private long head;
  private boolean attached;
  private boolean deleted;
  // Both sides (under this object's lock): closed with its connection; unmapped once nothing reads it.
  private boolean closed;
  private boolean unmapped;
  // Receiver side (under this object's lock): payloads received and not yet freed, in arrival order.
  private long expected;
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
   * {@link #create} with the same token and capacity; it is deleted once mapped.
   */
  public static SharedMemoryRing attach(Path dir, String name, long token, int capacity) throws IOException {
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
    long pos = RingLayout.place(head, n, capacity);
    if (!RingLayout.fits(pos, n, (long) LONGS.getAcquire(map, CONSUMED_AT), capacity)) {
      return -1;
    }
    data.put((int) (pos % capacity), src, index, n);
    head = pos + n;
    return pos;
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
    long consumed = -1;
    while (heldCount > 0 && freed[heldFirst]) {
      consumed = heldEnd[heldFirst];
      heldFirst = (heldFirst + 1) % m;
      heldCount--;
    }
    if (closed) {
      if (heldCount == 0) {
        unmap();
      }
    } else if (consumed >= 0) {
      LONGS.setRelease(map, CONSUMED_AT, consumed);
    }
  }
}
