package io.sparkcollective.core.transport.tcp.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.FramePool;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The shared-memory ring on its own: both sides in this JVM, over a real mapped file. */
@Timeout(60)
class SharedMemoryRingTest {
  private static final int CAPACITY = 1 << 20;

  @TempDir
  Path dir;

  private final FramePool pool = new FramePool(1 << 16);

  @Test
  void shouldCarryPayloadsInOrderThroughWrapsAndRefuseWhenFull() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(sender.path())));
    ByteBuffer payload = ByteBuffer.allocateDirect(CAPACITY);
    assertEquals(-1, sender.put(payload, 0, 100), "nothing goes in before the receiver has mapped the ring");
    SharedMemoryRing receiver = attach(sender, CAPACITY, 0);
    assertFalse(Files.exists(sender.path()), "the file is deleted once mapped");

    SplittableRandom rnd = new SplittableRandom(7);
    ArrayDeque<long[]> inFlight = new ArrayDeque<>(); // {position, length, seed}
    long usedUpTo = 0;
    long consumed = 0;
    int sent = 0;
    int refused = 0;
    for (int i = 0; i < 2000; i++) {
      if (inFlight.size() < 5 && rnd.nextInt(3) > 0) {
        int n = 1 + rnd.nextInt(CAPACITY / 3);
        long seed = rnd.nextLong();
        fill(payload, n, seed);
        long pos = sender.put(payload, 0, n);
        if (pos < 0) {
          refused++;
          // Refused only when it really does not fit behind what is in flight.
          long aligned = (usedUpTo + 7) & ~7L;
          long start = aligned % CAPACITY + n > CAPACITY ? aligned + CAPACITY - aligned % CAPACITY : aligned;
          assertTrue(start + n - consumed > CAPACITY, "refused " + n + " bytes with room for them");
          continue;
        }
        assertTrue(pos % CAPACITY + n <= CAPACITY, "a payload never wraps");
        assertEquals(0, pos % 8, "payloads start at multiples of 8");
        usedUpTo = pos + n;
        inFlight.addLast(new long[] {pos, n, seed});
        sent++;
      } else if (!inFlight.isEmpty()) {
        long[] next = inFlight.pollFirst();
        assertNull(receiver.check(next[0], (int) next[1]));
        Frame f = pool.acquire(0);
        receiver.take(next[0], (int) next[1], f);
        ByteBuffer expected = ByteBuffer.allocateDirect((int) next[1]);
        fill(expected, (int) next[1], next[2]);
        assertEquals(expected.clear(), f.payload().view((int) next[1]), "payload at " + next[0]);
        pool.release(f);
        consumed = next[0] + next[1];
      }
    }
    assertTrue(sent > 500 && refused > 10, sent + " sent, " + refused + " refused");
  }

  @Test
  void shouldRejectAPayloadOutOfSequence() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    SharedMemoryRing receiver = attach(sender, CAPACITY, 0);
    ByteBuffer b = ByteBuffer.allocateDirect(1000);
    assertEquals(0, sender.put(b, 0, 1000));
    assertNotNull(receiver.check(8, 1000), "not where the previous one ended");
    assertNotNull(receiver.check(0, CAPACITY + 1), "longer than the ring");
    assertNotNull(receiver.check(0, -1));
    assertNull(receiver.check(0, 1000));
    receiver.take(0, 1000, null);
    assertNotNull(receiver.check(CAPACITY - 8, 20), "across the end");
    assertNull(receiver.check(CAPACITY, 20), "at the next wrap");
    assertNull(receiver.check(1000, 20));
    receiver.take(1000, 20, null);
    assertNotNull(receiver.check(1020, 8), "payloads start at multiples of 8");
    assertNull(receiver.check(1024, 8));
  }

  /** Frames of one connection go to different ranks and come back in any order; space frees in order. */
  @Test
  void shouldFreeSpaceOnlyUpToTheOldestPayloadStillHeld() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    SharedMemoryRing receiver = attach(sender, CAPACITY, 0);
    ByteBuffer b = ByteBuffer.allocateDirect(CAPACITY);
    int half = CAPACITY / 2;
    long a = sender.put(b, 0, half);
    long c = sender.put(b, 0, half);
    assertEquals(-1, sender.put(b, 0, 8), "full");
    Frame fa = pool.acquire(0);
    Frame fc = pool.acquire(0);
    receiver.take(a, half, fa);
    receiver.take(c, half, fc);
    pool.release(fc);
    assertEquals(-1, sender.put(b, 0, 8), "the older payload is still held, so nothing is free");
    pool.release(fa);
    assertEquals(2L * half, sender.put(b, 0, half), "both freed");
    assertEquals(0, pool.outstanding());
  }

  @Test
  void shouldRefuseFilesThatAreNotTheOfferedRing() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    String name = sender.path().getFileName().toString();
    assertThrows(IOException.class, () -> SharedMemoryRing.attach(dir, name, sender.token() + 1, CAPACITY, 0));
    assertThrows(IOException.class, () -> SharedMemoryRing.attach(dir, name, sender.token(), CAPACITY * 2, 0));
    assertThrows(IOException.class, () -> SharedMemoryRing.attach(dir, "../" + name, sender.token(), CAPACITY, 0));
    assertThrows(IOException.class, () -> SharedMemoryRing.attach(dir, "passwd", sender.token(), CAPACITY, 0));
    Path notAFile = Files.createDirectory(dir.resolve("spark-collective-1-x.ring"));
    assertThrows(IOException.class, () -> SharedMemoryRing.attach(dir, notAFile.getFileName().toString(),
        sender.token(), CAPACITY, 0));
    assertTrue(Files.exists(sender.path()), "a refused attach leaves the offer in place");
    sender.delete();
    assertFalse(Files.exists(sender.path()));
  }

  @Test
  void shouldRemoveRingFilesOfProcessesThatAreGone() throws Exception {
    Process p = new ProcessBuilder("true").start();
    assertTrue(p.waitFor(10, TimeUnit.SECONDS));
    Path dead = Files.createFile(dir.resolve("spark-collective-" + p.pid() + "-abc.ring"));
    Path alive = SharedMemoryRing.create(dir, CAPACITY).path();
    Path other = Files.createFile(dir.resolve("unrelated.ring"));
    SharedMemoryRing.removeStale(dir);
    assertFalse(Files.exists(dead));
    assertTrue(Files.exists(alive));
    assertTrue(Files.exists(other));
  }

  /**
   * Whole messages as records: random sizes (odd ones too), held and released out of order, through many wraps;
   * each arrives once, in order, with its bytes; a record is refused only when it truly does not fit.
   */
  @Test
  void shouldCarryRecordsInOrderThroughWrapsAndRefuseThemWhenFull() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    ByteBuffer msg = ByteBuffer.allocateDirect(CAPACITY).order(ByteOrder.LITTLE_ENDIAN);
    assertFalse(sender.putRecord(msg, 0, 100, 0), "nothing goes in before the receiver has mapped the ring");
    SharedMemoryRing receiver = attach(sender, CAPACITY, 0);
    SplittableRandom rnd = new SplittableRandom(11);
    ArrayDeque<long[]> sent = new ArrayDeque<>(); // {length, seed}, in sending order
    List<Frame> held = new ArrayList<>();
    int[] received = {0};
    int refused = 0;
    int delivered = 0;
    for (int i = 0; i < 3000; i++) {
      int choice = rnd.nextInt(4);
      if (choice < 2) {
        int n = 8 + rnd.nextInt(choice == 0 ? 64 : CAPACITY / 4);
        long seed = rnd.nextLong();
        fill(msg, n, seed);
        msg.order(ByteOrder.LITTLE_ENDIAN).putInt(0, n - 4);
        if (sender.putRecord(msg, 0, n, 0)) {
          sent.addLast(new long[] {n, seed});
        } else {
          refused++;
        }
      } else if (choice == 2) {
        assertNull(receiver.pollRecords((from, ring, offset, whole, pos) -> {
          long[] next = sent.pollFirst();
          assertNotNull(next, "a record that was not sent");
          assertEquals(next[0], whole, "record " + received[0]);
          assertEquals(0, pos % 8, "records start at multiples of 8");
          assertTrue(offset + whole <= CAPACITY, "a record never wraps");
          ByteBuffer expected = ByteBuffer.allocateDirect(whole).order(ByteOrder.LITTLE_ENDIAN);
          fill(expected, whole, next[1]);
          expected.putInt(0, whole - 4).clear();
          assertEquals(expected, ring.duplicate().position(offset).limit(offset + whole), "record " + received[0]);
          Frame f = pool.acquire(0);
          // The payload after an 8-byte head (payloads start at multiples of 8).
          from.takeRecord(pos, whole, 8, f);
          assertEquals(whole - 8, f.payload().size());
          held.add(f);
          received[0]++;
          return null;
        }));
        assertFalse(receiver.hasRecords());
        delivered = received[0];
      } else if (!held.isEmpty()) {
        // Frames go back in any order.
        pool.release(held.remove(rnd.nextInt(held.size())));
      }
    }
    assertTrue(delivered > 500 && refused > 10, delivered + " delivered, " + refused + " refused");
    held.forEach(pool::release);
  }

  /**
   * Sender and receiver on two threads, the receiver's frames released by a third in any order: every record
   * arrives once, in order, with its bytes, however the sender's starts over at the beginning of an emptied
   * ring interleave with the receiver's reads and frees.
   */
  @Test
  void shouldKeepEveryRecordIntactWithBothSidesRunningAtOnce() throws Exception {
    int capacity = 1 << 16;
    SharedMemoryRing sender = SharedMemoryRing.create(dir, capacity);
    SharedMemoryRing receiver = attach(sender, capacity, 0);
    int records = 200_000;
    BlockingQueue<Frame> toRelease = new LinkedBlockingQueue<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread send = new Thread(() -> {
      ByteBuffer msg = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
      SplittableRandom rnd = new SplittableRandom(5);
      try {
        for (int i = 0; i < records && failure.get() == null; ) {
          int n = 16 + rnd.nextInt(rnd.nextInt(8) == 0 ? capacity / 3 : 200);
          msg.putInt(0, n - 4).putInt(4, i).putInt(8, n);
          msg.put(12, (byte) i).put(n - 1, (byte) (i * 7));
          if (sender.putRecord(msg, 0, n, 0)) {
            if (++i % 50 == 0) {
              LockSupport.parkNanos(20_000); // the receiver catches up: the ring empties now and then
            }
          } else {
            Thread.onSpinWait();
          }
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      }
    });
    AtomicBoolean stop = new AtomicBoolean();
    Thread release = new Thread(() -> {
      SplittableRandom rnd = new SplittableRandom(6);
      List<Frame> held = new ArrayList<>();
      try {
        while (!stop.get() || !held.isEmpty() || !toRelease.isEmpty()) {
          Frame f = toRelease.poll(100, TimeUnit.MICROSECONDS);
          if (f != null) {
            held.add(f);
          }
          if (!held.isEmpty() && (f == null || held.size() > rnd.nextInt(4))) {
            pool.release(held.remove(rnd.nextInt(held.size())));
          }
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      }
    });
    release.start();
    send.start();
    int[] next = {0};
    long[] startsOver = {0};
    long[] lastEnd = {0};
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
    while (next[0] < records && failure.get() == null && System.nanoTime() < deadline) {
      String bad = receiver.pollRecords((from, ring, offset, whole, pos) -> {
        assertEquals(next[0], ring.getInt(offset + 4), "record order");
        assertEquals(whole, ring.getInt(offset + 8), "record " + next[0]);
        assertEquals((byte) next[0], ring.get(offset + 12), "record " + next[0]);
        assertEquals((byte) (next[0] * 7), ring.get(offset + whole - 1), "record " + next[0]);
        Frame f = pool.acquire(0);
        from.takeRecord(pos, whole, 8, f);
        toRelease.add(f);
        next[0]++;
        // At the beginning of the data area although it would have fitted behind the previous record: only a
        // start over puts it there (running through the data area goes there only when the end is reached).
        long behind = RingLayout.align(lastEnd[0]) % capacity;
        startsOver[0] += pos % capacity == 0 && behind != 0 && behind + whole <= capacity ? 1 : 0;
        lastEnd[0] = pos + whole;
        return null;
      });
      assertNull(bad);
    }
    stop.set(true);
    send.join(10_000);
    release.join(10_000);
    assertNull(failure.get());
    assertEquals(records, next[0]);
    assertEquals(0, pool.outstanding());
    // How often depends on the threads' timing; shouldStartOverAtTheBeginningOfAnEmptiedRing checks where.
    assertTrue(startsOver[0] > 0, "no record started over at the beginning of the data area");
  }

  /**
   * A sender starts over at the beginning of the data area when the ring is empty, or when what the receiver
   * still holds lies in its second half, so the memory it writes stays what is in flight.
   */
  @Test
  void shouldStartOverAtTheBeginningOfAnEmptiedRing() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    SharedMemoryRing receiver = attach(sender, CAPACITY, 0);
    ByteBuffer b = ByteBuffer.allocateDirect(CAPACITY);
    assertEquals(0, sender.put(b, 0, 1000));
    assertEquals(1000, sender.put(b, 0, 1000), "one after the other while the first is held");
    receiver.take(0, 1000, null);
    receiver.take(1000, 1000, null);
    assertEquals(CAPACITY, sender.put(b, 0, 1000), "emptied: at the beginning again (the next wrap)");
    Frame fc = pool.acquire(0);
    receiver.take(CAPACITY, 1000, fc);
    long d = sender.put(b, 0, CAPACITY / 2);
    assertEquals(CAPACITY + 1000, d, "behind the previous one");
    pool.release(fc);
    Frame fd = pool.acquire(0);
    receiver.take(d, CAPACITY / 2, fd);
    long e = sender.put(b, 0, 1000);
    assertEquals(d + CAPACITY / 2, e, "what is held starts in the first half: on after it");
    receiver.take(e, 1000, null);
    long h = sender.put(b, 0, 1000);
    assertEquals(e + 1000, h);
    Frame fh = pool.acquire(0);
    receiver.take(h, 1000, fh);
    pool.release(fd);
    long i = sender.put(b, 0, 1000);
    assertEquals(2L * CAPACITY, i, "what is held starts in the second half: at the beginning before it");
    assertNull(receiver.check(i, 1000), "the receiver takes the next wrap as where one may start");
    receiver.take(i, 1000, null);
    pool.release(fh);
    assertEquals(0, pool.outstanding());
  }

  /**
   * A record claimed and written in place is published with the length written, which may be less than claimed;
   * a dropped claim publishes nothing and leaves the ring as it was; a claim is refused as a record would be.
   */
  @Test
  void shouldPublishARecordWrittenInPlaceAndForgetADroppedClaim() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    SharedMemoryRing receiver = attach(sender, CAPACITY, 0);
    ByteBuffer area = sender.dataArea();
    assertEquals(-1, sender.claimRecord(64, 1), "the receiver has not read the socket's DATA yet");
    assertEquals(-1, sender.claimRecord(CAPACITY + 8, 0), "longer than the ring");
    int at = sender.claimRecord(1000, 0);
    assertEquals(0, at);
    area.putInt(at, 596);
    for (int i = 4; i < 600; i++) {
      area.put(at + i, (byte) i);
    }
    assertFalse(receiver.hasRecords(), "nothing is published before publishClaim");
    sender.publishClaim(600);
    List<String> seen = new ArrayList<>();
    assertNull(receiver.pollRecords((from, ring, offset, whole, pos) -> {
      for (int i = 4; i < whole; i++) {
        assertEquals((byte) i, ring.get(offset + i), "byte " + i);
      }
      seen.add(pos + ":" + whole);
      from.takeRecord(pos, whole, 8, null);
      return null;
    }));
    assertEquals(List.of("0:600"), seen);

    int dropped = sender.claimRecord(2000, 0);
    assertEquals(0, dropped, "emptied: at the beginning again (the next wrap)");
    area.putInt(dropped, 1996);
    sender.dropClaim();
    assertFalse(receiver.hasRecords(), "a dropped claim publishes nothing");
    assertThrows(IllegalStateException.class, () -> sender.publishClaim(64));
    ByteBuffer msg = ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 60);
    msg.put(63, (byte) 77);
    assertTrue(sender.putRecord(msg, 0, 64, 0));
    seen.clear();
    assertNull(receiver.pollRecords((from, ring, offset, whole, pos) -> {
      assertEquals((byte) 77, ring.get(offset + 63));
      seen.add(pos + ":" + whole);
      from.takeRecord(pos, whole, 8, null);
      return null;
    }));
    assertEquals(List.of(CAPACITY + ":64"), seen, "the record after the dropped claim, where the claim was");
  }

  /** DATA that went over the socket keeps later records out until the receiver has read it: order is kept. */
  @Test
  void shouldHoldRecordsBackUntilTheSocketsDataIsRead() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    SharedMemoryRing receiver = attach(sender, CAPACITY, 2);
    ByteBuffer msg = ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 60);
    assertFalse(sender.putRecord(msg, 0, 64, 3), "the receiver has read 2 of the 3 sent over the socket");
    receiver.socketDataRead(3);
    assertTrue(sender.putRecord(msg, 0, 64, 3));
    assertTrue(receiver.hasRecords());
  }

  /** The receiver marks itself blocked; the next record published claims one wake-up, and only one. */
  @Test
  void shouldRingAParkedReceiverOncePerBlock() throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    SharedMemoryRing receiver = attach(sender, CAPACITY, 0);
    ByteBuffer msg = ByteBuffer.allocateDirect(64).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 60);
    assertTrue(sender.putRecord(msg, 0, 64, 0));
    assertFalse(sender.wakeReceiver(), "a receiver that is not blocked is not rung");
    assertTrue(receiver.park(true), "a record waits already: do not block");
    receiver.park(false);
    assertNull(receiver.pollRecords((from, ring, offset, whole, pos) -> {
      from.takeRecord(pos, whole, 8, null);
      return null;
    }));
    assertFalse(receiver.park(true), "nothing waits: block");
    assertTrue(sender.putRecord(msg, 0, 64, 0));
    assertTrue(sender.wakeReceiver(), "blocked: rung");
    assertTrue(sender.putRecord(msg, 0, 64, 0));
    assertFalse(sender.wakeReceiver(), "rung once per block");
    receiver.park(false);
  }

  /**
   * A sender that writes its ring behind the protocol's back (through its own mapping of the file): every broken
   * rule closes the connection with a reason instead of reading outside the records or looping.
   */
  @Test
  void shouldRefuseRecordsThatBreakTheRingsRules() throws IOException {
    String[] problems = {
      breach(m -> m.putLong(RingLayout.PUBLISHED_AT, CAPACITY + 8L)), // more than the ring holds
      breach(m -> {
        m.putInt(RingLayout.DATA_AT, 100); // a record running past what is published
        m.putLong(RingLayout.PUBLISHED_AT, 64);
      }),
      breach(m -> {
        m.putInt(RingLayout.DATA_AT, -5);
        m.putLong(RingLayout.PUBLISHED_AT, 64);
      }),
      breach(m -> {
        m.putInt(RingLayout.DATA_AT, RingLayout.WRAP_MARK); // a wrap mark at a wrap: no progress
        m.putLong(RingLayout.PUBLISHED_AT, 64);
      }),
      breach(m -> m.putLong(RingLayout.PUBLISHED_AT, 2)), // ends inside the first length field
      breach(m -> {
        m.putInt(RingLayout.DATA_AT, CAPACITY); // longer than the ring
        m.putLong(RingLayout.PUBLISHED_AT, CAPACITY);
      }),
    };
    for (String p : problems) {
      assertNotNull(p);
      assertTrue(p.contains("shared-memory"), p);
    }
  }

  /** Maps a fresh ring's file, lets {@code write} break it, attaches, and returns what polling it says. */
  private String breach(java.util.function.Consumer<ByteBuffer> write) throws IOException {
    SharedMemoryRing sender = SharedMemoryRing.create(dir, CAPACITY);
    java.nio.MappedByteBuffer m;
    try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(sender.path(),
        java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
      m = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, RingLayout.fileBytes(CAPACITY));
    }
    m.order(ByteOrder.nativeOrder());
    SharedMemoryRing receiver = attach(sender, CAPACITY, 0);
    write.accept(m);
    assertTrue(receiver.hasRecords());
    return receiver.pollRecords((from, ring, offset, whole, pos) -> {
      throw new AssertionError("a record was handed on: " + whole + " bytes at " + pos);
    });
  }

  /** The receiving side of {@code sender}'s ring, with {@code socketData} DATA messages read from the socket. */
  private SharedMemoryRing attach(SharedMemoryRing sender, int capacity, long socketData) throws IOException {
    return SharedMemoryRing.attach(dir, sender.path().getFileName().toString(), sender.token(), capacity,
        socketData);
  }

  private static void fill(ByteBuffer b, int n, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    b.clear();
    for (int i = 0; i < n; i++) {
      b.put(i, (byte) r.nextInt());
    }
    b.limit(n);
  }
}
