package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.api.RemoteFailureException;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.ManagedCommunicator;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.NettyLeaks;
import io.sparkcollective.core.testing.GroupHarness.Outcome;
import io.sparkcollective.core.testing.Reference;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.testing.TypedData;
import io.sparkcollective.core.transport.Frame;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The engine over real sockets on loopback: endpoints in this JVM, one per rank. */
@Timeout(300)
class TcpTransportTest {
  @org.junit.jupiter.api.AfterAll
  static void noBufferLeaked() throws Exception {
    org.junit.jupiter.api.Assertions.assertTrue(NettyLeaks.active(), "the build must install the leak detector");
    java.util.List<String> leaks = NettyLeaks.collect();
    org.junit.jupiter.api.Assertions.assertTrue(leaks.isEmpty(), "Netty buffers leaked: " + leaks);
  }

  private static final Duration LIMIT = Duration.ofSeconds(120);
  private static final CollectiveConfig CHECKED = checked("caller");

  /**
   * Checksums on, small segments; {@code progress}: who moves the bytes (caller-driven, with payloads through
   * shared memory between these same-host endpoints; caller-unchecked: the same without checksums, so the
   * engine writes segments straight into the peers' rings; caller-socket: caller-driven with every payload on
   * the socket; caller-blocking: the same with every wait blocking at once, so waiting threads block in the
   * socket poll or park until another hands the sockets over, instead of finding their frames while they spin;
   * eventLoop: Netty's threads).
   */
  private static CollectiveConfig checked(String progress) {
    boolean blocking = progress.equals("caller-blocking");
    boolean socketOnly = blocking || progress.equals("caller-socket");
    boolean unchecked = progress.equals("caller-unchecked");
    return CollectiveConfig.from(Map.of(CollectiveConfig.CHECKSUM, String.valueOf(!unchecked),
        CollectiveConfig.SEGMENT_BYTES, "65536", CollectiveConfig.JOIN_TIMEOUT_MS, "5000",
        CollectiveConfig.PROGRESS, socketOnly || unchecked ? "caller" : progress,
        CollectiveConfig.SHARED_MEMORY_BYTES, socketOnly ? "0" : "16777216",
        CollectiveConfig.SPIN_MICROS, blocking ? "0" : CollectiveConfig.defaults().get(CollectiveConfig.SPIN_MICROS)));
  }

  /** Ring files of this process mapped now (from /proc/self/maps; deleted files stay listed while mapped). */
  static long mappedRings() throws java.io.IOException {
    String mine = "/spark-collective-" + ProcessHandle.current().pid() + "-";
    try (java.util.stream.Stream<String> lines = java.nio.file.Files.lines(java.nio.file.Path.of("/proc/self/maps"))) {
      return lines.filter(l -> l.contains(mine)).map(l -> l.substring(l.indexOf('/'))).distinct().count();
    }
  }

  /** Payloads the endpoints of {@code cluster} received through shared-memory rings. */
  static long sharedPayloads(TcpCluster cluster, int endpoints) {
    long sum = 0;
    for (int i = 0; i < endpoints; i++) {
      sum += cluster.endpoint(i).sharedMemoryPayloads();
    }
    return sum;
  }

  @ParameterizedTest(name = "{0} ranks, progress={1}")
  @CsvSource({"1, caller", "2, caller", "3, caller", "5, caller", "6, caller", "2, caller-socket", "3, caller-socket",
      "3, caller-blocking", "2, eventLoop", "4, eventLoop"})
  void shouldMatchTheReferenceOverTcpForEveryAlgorithm(int n, String progress) throws Exception {
    try (TcpCluster cluster = new TcpCluster(n, checked(progress))) {
      List<Communicator> group = cluster.group("matrix-" + n);
      try {
        GroupHarness.run(group, LIMIT, comm -> {
          for (Algorithm a : new Algorithm[] {Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING,
              Algorithm.RING_2D, Algorithm.RECURSIVE_DOUBLING}) {
            for (int len : new int[] {0, 1, n + 1, 100_003}) {
              for (DType dtype : new DType[] {DType.F32, DType.I64, DType.BF16}) {
                for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX}) {
                  long seed = len * 31L + dtype.ordinal() * 7 + op.ordinal();
                  long[][] ints = new long[n][];
                  double[][] floats = new double[n][];
                  for (int r = 0; r < n; r++) {
                    SplittableRandom rnd = new SplittableRandom(seed * 1000 + r);
                    ints[r] = rnd.longs(len).toArray();
                    floats[r] = rnd.ints(len, -8, 9).asDoubleStream().toArray();
                  }
                  TypedData mine = TypedData.of(dtype, TypedData.Form.ARRAY, ints[comm.rank()], floats[comm.rank()]);
                  comm.allReduce(mine.buffer(), op, CollectiveOptions.DEFAULT.withAlgorithm(a));
                  long[] expected = dtype.isFloating() ? Reference.reduceExactFloats(dtype, op, floats)
                      : Reference.reduceIntegers(dtype, op, ints);
                  assertArrayEquals(expected, IntStream.range(0, len).mapToLong(mine::bits).toArray(),
                      a + " " + len + " " + dtype + " " + op);
                }
              }
            }
          }
          float[] root = new float[70_000];
          Arrays.fill(root, comm.rank() == 0 ? 5 : 0);
          comm.broadcast(root, 0);
          assertEquals(5f, root[69_999]);
          assertEquals(n, comm.allGatherObjects("rank-" + comm.rank()).size());
          return null;
        });
      } finally {
        GroupHarness.closeAll(group);
      }
      for (int i = 0; i < n; i++) {
        assertEquals(0, cluster.endpoint(i).rejectedFrames());
      }
      long shared = sharedPayloads(cluster, n);
      if (n > 1 && progress.equals("caller")) {
        org.junit.jupiter.api.Assertions.assertTrue(shared > 0, "no payload went through shared memory");
      } else {
        assertEquals(0, shared, "payloads through shared memory with progress=" + progress);
      }
    }
  }

  /**
   * Every rank counts the payload bytes each peer's link delivered and how long they took: over the socket
   * a ring all-reduce's 2(N-1)/N of the vector, all from the ring's previous rank; through shared memory
   * nothing (no link was timed).
   */
  @ParameterizedTest
  @ValueSource(strings = {"caller-socket", "caller"})
  void shouldCountWhatEachLinkDeliveredAndHowFast(String progress) throws Exception {
    int n = 3;
    int floats = 3 << 18; // 3 MiB: chunks of 1 MiB, segments of 64 KiB
    try (TcpCluster cluster = new TcpCluster(n, checked(progress))) {
      List<Communicator> group = cluster.group("receipts-" + progress);
      try {
        List<long[]> seen = GroupHarness.run(group, LIMIT, comm -> {
          float[] v = new float[floats];
          Arrays.fill(v, comm.rank());
          comm.allReduce(DataBuffer.of(v), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING));
          assertEquals(3f, v[floats - 1]);
          io.sparkcollective.core.transport.LinkReceipts r = ((ManagedCommunicator) comm).receipts();
          long[] out = new long[2 * n];
          for (int p = 0; p < n; p++) {
            out[2 * p] = r.bytes(p);
            out[2 * p + 1] = r.nanos(p);
          }
          return out;
        });
        for (int rank = 0; rank < n; rank++) {
          long[] s = seen.get(rank);
          long total = 0;
          int links = 0;
          for (int p = 0; p < n; p++) {
            total += s[2 * p];
            links += s[2 * p] > 0 ? 1 : 0;
            assertEquals(s[2 * p] > 0, s[2 * p + 1] > 0, "rank " + rank + " from " + p + ": bytes and time together");
          }
          if (progress.equals("caller")) {
            assertEquals(0, total, "rank " + rank + ": payloads through shared memory are not timed");
          } else {
            assertEquals(2L * (n - 1) * floats * Float.BYTES / n, total, "rank " + rank + ": 2(N-1)/N of the vector");
            assertEquals(1, links, "rank " + rank + ": everything from the ring's previous rank");
          }
        }
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }

  /**
   * Endpoints that do not take payloads through shared memory (one with it turned off, one whose connections
   * Netty's threads read) ignore the offer of a ring; payloads keep coming over the socket.
   */
  @Test
  void shouldKeepPayloadsOnTheSocketWhenThePeerDoesNotMapTheRing() throws Exception {
    List<CollectiveConfig> configs = List.of(checked("caller"), checked("caller-socket"), checked("eventLoop"));
    try (TcpCluster cluster = new TcpCluster(configs)) {
      List<Communicator> group = cluster.group("mixed");
      try {
        GroupHarness.run(group, LIMIT, comm -> {
          float[] v = new float[500_003];
          Arrays.fill(v, comm.rank() + 1);
          comm.allReduce(v, ReduceOp.SUM);
          assertEquals(6f, v[0]);
          assertEquals(6f, v[v.length - 1]);
          return null;
        });
      } finally {
        GroupHarness.closeAll(group);
      }
      assertEquals(0, sharedPayloads(cluster, 3));
    }
  }

  /**
   * Between endpoints of one host every DATA message goes through the rings, the smallest included; with no
   * spinning (every wait blocks in the poll at once) senders ring the blocked receivers through the socket; and
   * a group that closes right after its last operation loses none of its frames to the LEAVE that follows them.
   */
  @Test
  void shouldCarrySmallMessagesThroughTheRingsAndRingBlockedReceivers() throws Exception {
    CollectiveConfig blocking = CollectiveConfig.from(Map.of(CollectiveConfig.SPIN_MICROS, "0",
        CollectiveConfig.JOIN_TIMEOUT_MS, "5000", CollectiveConfig.SHARED_MEMORY_BYTES, "1048576"));
    int n = 3;
    int ops = 200;
    try (TcpCluster cluster = new TcpCluster(n, blocking)) {
      for (int stage = 0; stage < 3; stage++) {
        List<Communicator> group = cluster.group("small-" + stage);
        try {
          GroupHarness.run(group, LIMIT, comm -> {
            for (int i = 0; i < ops; i++) {
              int[] v = {comm.rank() + i, i};
              comm.allReduce(v, ReduceOp.SUM);
              assertEquals(3 * i + 3, v[0], "operation " + i);
              assertEquals(3 * i, v[1], "operation " + i);
            }
            return null;
          });
        } finally {
          GroupHarness.closeAll(group);
        }
      }
      long shared = sharedPayloads(cluster, n);
      org.junit.jupiter.api.Assertions.assertTrue(shared >= 3L * ops * n, shared + " payloads through shared memory");
      long wakeups = 0;
      for (int i = 0; i < n; i++) {
        wakeups += cluster.endpoint(i).sharedMemoryWakeups();
      }
      org.junit.jupiter.api.Assertions.assertTrue(wakeups > 0, "no blocked receiver was rung");
    }
  }

  /**
   * A ring far smaller than what is in flight: payloads that do not fit go over the socket between ones that
   * do, segments of odd sizes wrap around the ring's end, and every result still equals the sum.
   */
  @ParameterizedTest(name = "checksum={0}")
  @ValueSource(booleans = {true, false})
  void shouldMixSharedMemoryAndSocketPayloadsWhenTheRingFills(boolean checksum) throws Exception {
    CollectiveConfig small = CollectiveConfig.from(Map.of(CollectiveConfig.CHECKSUM, String.valueOf(checksum),
        CollectiveConfig.SEGMENT_BYTES, "262144", CollectiveConfig.SHARED_MEMORY_BYTES, "1048576",
        CollectiveConfig.JOIN_TIMEOUT_MS, "5000"));
    int n = 3;
    long mappedBefore = mappedRings();
    try (TcpCluster cluster = new TcpCluster(n, small)) {
      List<Communicator> group = cluster.group("small-ring");
      try {
        GroupHarness.run(group, LIMIT, comm -> {
          for (int len : new int[] {3_000_001, 777_777, 1_500_007}) {
            for (Algorithm a : new Algorithm[] {Algorithm.RING, Algorithm.HALVING_DOUBLING}) {
              float[] v = new float[len];
              for (int i = 0; i < len; i++) {
                v[i] = (i % 1000) * (comm.rank() + 1);
              }
              comm.allReduce(DataBuffer.of(v), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(a));
              for (int i = 0; i < len; i++) {
                if (v[i] != (i % 1000) * 6f) {
                  throw new AssertionError(a + " length " + len + ": element " + i + " is " + v[i]);
                }
              }
            }
          }
          return null;
        });
      } finally {
        GroupHarness.closeAll(group);
      }
      org.junit.jupiter.api.Assertions.assertTrue(sharedPayloads(cluster, n) > 0);
      long claims = 0;
      for (int i = 0; i < n; i++) {
        claims += cluster.endpoint(i).sharedMemoryClaims();
      }
      // Without checksums the engine writes segments straight into the rings while they have room.
      assertEquals(!checksum, claims > 0, claims + " segments written straight into a ring");
      org.junit.jupiter.api.Assertions.assertTrue(mappedRings() > mappedBefore, "rings are mapped while in use");
    }
    // Closed connections unmap their rings at once (a lost peer's ring must not hold memory until a GC).
    assertEquals(mappedBefore, mappedRings(), "ring mappings left after the endpoints closed");
    try (java.util.stream.Stream<java.nio.file.Path> left = java.nio.file.Files.list(small.sharedMemoryDir())) {
      long mine = left.filter(p -> p.getFileName().toString().startsWith("spark-collective-"
          + ProcessHandle.current().pid() + "-")).count();
      assertEquals(0, mine, "ring files left in " + small.sharedMemoryDir());
    }
  }

  /**
   * Caller-driven sockets with several waiting threads per endpoint: two ranks per endpoint, each running an
   * operation on tag 1 (async, its own thread) while it runs others on tag 0, so threads hand the sockets to
   * each other and frames of one operation wait while another's are read. Every result equals the sum.
   */
  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "caller-unchecked", "caller-socket", "caller-blocking", "eventLoop"})
  void shouldKeepConcurrentOperationsOfRanksSharingAnEndpointApart(String progress) throws Exception {
    try (TcpCluster cluster = new TcpCluster(2, checked(progress))) {
      List<Communicator> group = cluster.group("shared-endpoints", new int[] {0, 0, 1, 1});
      try {
        List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
          float[] background = new float[300_000];
          Arrays.fill(background, comm.rank() + 1);
          java.util.concurrent.CompletableFuture<Void> pending = comm.allReduceAsync(DataBuffer.of(background),
              ReduceOp.SUM, CollectiveOptions.DEFAULT.withTag(1));
          float[] small = new float[7];
          for (int i = 0; i < 50; i++) {
            Arrays.fill(small, i + comm.rank());
            comm.allReduce(small, ReduceOp.SUM);
            assertEquals(4 * i + 6, small[6], "operation " + i);
          }
          pending.get(30, java.util.concurrent.TimeUnit.SECONDS);
          return background;
        });
        for (float[] x : out) {
          assertEquals(10f, x[0]);
          assertEquals(10f, x[x.length - 1]);
        }
        if (progress.equals("caller-unchecked")) {
          assertTrue(cluster.endpoint(0).sharedMemoryClaims() > 0, "no segment written straight into a ring");
        }
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }

  @Test
  void shouldReuseConnectionsAcrossManyGroupsAndLeakNoFrames() throws Exception {
    int n = 3;
    try (TcpCluster cluster = new TcpCluster(n, CHECKED)) {
      for (int g = 0; g < 40; g++) {
        List<Communicator> group = cluster.group("stage-" + g + "-attempt-0");
        try {
          int stage = g;
          GroupHarness.run(group, LIMIT, comm -> {
            float[] grad = new float[1000];
            Arrays.fill(grad, comm.rank() + stage);
            comm.allReduce(grad, ReduceOp.SUM);
            assertEquals(3 + 3 * stage, grad[999]);
            return null;
          });
        } finally {
          GroupHarness.closeAll(group);
        }
      }
      for (int i = 0; i < n; i++) {
        assertEquals(0, cluster.endpoint(i).rejectedFrames());
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (cluster.endpoint(i).outstandingFrames() != 0 && System.nanoTime() < deadline) {
          Thread.sleep(10);
        }
        assertEquals(0, cluster.endpoint(i).outstandingFrames(), "frames leaked on endpoint " + i);
      }
    }
  }

  @Test
  void shouldRefuseAnEndpointWithTheWrongSecretAndLeaveTheGroupUnharmed() throws Exception {
    try (TcpCluster cluster = new TcpCluster(2, CHECKED);
        TcpEndpoint intruder = TcpEndpoint.start("127.0.0.1", 0, "wrong-secret", CHECKED)) {
      CollectiveAuthenticationException e = assertThrows(CollectiveAuthenticationException.class,
          () -> TcpGroup.join(intruder, "g", 1, List.of(cluster.endpoint(0).address(), intruder.address()), CHECKED));
      // The intruder dials rank 0, whose challenge it cannot match: the dialling side detects the wrong secret.
      assertTrue(e.getMessage().contains("failed authentication"), e.getMessage());
      List<Communicator> group = cluster.group("g");
      GroupHarness.run(group, LIMIT, comm -> {
        float[] x = {1};
        comm.allReduce(x, ReduceOp.SUM);
        assertEquals(2f, x[0]);
        return null;
      });
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldRefuseADuplicateRankAndNameTheRanksThatNeverJoin() throws Exception {
    CollectiveConfig quick = CollectiveConfig.from(Map.of(CollectiveConfig.JOIN_TIMEOUT_MS, "1500"));
    try (TcpCluster cluster = new TcpCluster(3, quick)) {
      List<java.net.InetSocketAddress> addrs = cluster.addresses();
      // Rank 2 never comes: ranks 0 and 1 fail at the join timeout naming it. The first to time out aborts the
      // half-formed group with that reason, which may reach the other before its own deadline does.
      List<Outcome<Communicator>> outcomes = GroupHarness.runRanks(2, LIMIT,
          r -> TcpGroup.join(cluster.endpoint(r), "absent", r, addrs, quick));
      int timedOut = 0;
      for (Outcome<Communicator> o : outcomes) {
        assertTrue(o.error instanceof CollectiveTimeoutException || o.error instanceof RemoteFailureException,
            o.toString());
        assertTrue(o.error.getMessage().contains("ranks [2] did not join"), o.error.getMessage());
        timedOut += o.error instanceof CollectiveTimeoutException ? 1 : 0;
      }
      assertTrue(timedOut >= 1, outcomes.toString());
      // Two endpoints claim rank 1 of group "dup": the second claim is refused by rank 0.
      try (TcpEndpoint impostor = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, quick)) {
        List<java.net.InetSocketAddress> fake = List.of(addrs.get(0), impostor.address());
        List<Outcome<Communicator>> dup = GroupHarness.runRanks(2, LIMIT,
            r -> TcpGroup.join(r == 0 ? cluster.endpoint(0) : impostor, "dup", r,
                r == 0 ? List.of(addrs.get(0), addrs.get(1)) : fake, quick));
        assertInstanceOf(CollectiveException.class, dup.get(1).error, dup.toString());
        assertTrue(dup.get(1).error.getMessage().contains("expected at"), dup.get(1).error.getMessage());
      }
    }
  }

  /**
   * A rank that gives up after its endpoint closed (a join that fails as the executor shuts down) still owes
   * its peers ABORT notices: they are dropped and released, neither written on stopped event loops nor leaked,
   * over a connection made before the close and to an endpoint never dialled.
   */
  @Test
  void shouldReleaseTheNoticesOfARankThatGivesUpAfterItsEndpointClosed() throws Exception {
    try (TcpCluster cluster = new TcpCluster(3, CHECKED)) {
      TcpTransport[] t = new TcpTransport[2];
      List<java.net.InetSocketAddress> two = cluster.addresses().subList(0, 2);
      GroupHarness.runRanks(2, LIMIT, r -> t[r] = cluster.endpoint(r).join("closing", r, two))
          .forEach(o -> assertEquals(null, o.error));
      cluster.endpoint(0).close();
      t[0].abort(new CollectiveException("rank 0 gave up late"));
      TcpEndpoint closed = cluster.endpoint(0);
      TcpEndpoint never = cluster.endpoint(2);
      io.netty.buffer.ByteBuf late = io.sparkcollective.core.transport.tcp.protocol.ControlMessages.leave(
          io.netty.buffer.PooledByteBufAllocator.DEFAULT, 7L, 0, 1, 1);
      closed.writeWithoutWaiting(never.addressKey(), never.addressKey(), never.address(), late);
      assertEquals(0, late.refCnt(), "a notice written after the endpoint closed is released at once");
      List<String> leaks = NettyLeaks.collect();
      assertTrue(leaks.isEmpty(), "Netty buffers leaked: " + leaks);
      t[1].close();
    }
  }

  /**
   * A frame on its way to a same-host peer is lent its place in the peer's ring: the segment written there
   * arrives as sent; a claim released without sending publishes nothing and leaves the connection as it was;
   * anything else written to that connection by the claiming thread while its claim is open is refused.
   */
  @Test
  void shouldLendAFrameItsPlaceInThePeersRingAndForgetAReleasedClaim() throws Exception {
    CollectiveConfig unchecked = checked("caller-unchecked");
    try (TcpCluster cluster = new TcpCluster(2, unchecked)) {
      TcpTransport[] t = new TcpTransport[2];
      GroupHarness.runRanks(2, LIMIT, r -> t[r] = cluster.endpoint(r).join("claims", r, cluster.addresses()))
          .forEach(o -> assertEquals(null, o.error));
      // The ring is offered once the connection is up: the join made it.
      Frame claimed = null;
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (System.nanoTime() < deadline) {
        Frame f = t[0].acquireFor(1, 64);
        if (f.lender() != null) {
          claimed = f;
          break;
        }
        t[0].release(f);
        Thread.sleep(10);
      }
      org.junit.jupiter.api.Assertions.assertNotNull(claimed, "no frame was lent a place in the peer's ring");
      assertThrows(IllegalStateException.class, () -> t[0].acquireFor(1, 64), "a second claim while one is open");
      Frame lent = claimed;
      assertThrows(IllegalStateException.class, () -> t[0].send(0, lent), "sent to another peer than it was lent for");
      // Refused, the frame went back to the pool and its claim was dropped: claim again.
      claimed = t[0].acquireFor(1, 64);
      org.junit.jupiter.api.Assertions.assertNotNull(claimed.lender(), "claimed again");
      Frame other = t[0].acquire(16);
      other.payload().size(16);
      other.header(1, 0, 0, 0, 0, DType.F32.wireCode(), ReduceOp.SUM.wireCode(), -1, 0, 4, 0);
      assertThrows(IllegalStateException.class, () -> t[0].send(1, other), "a message overtaking the claim");
      t[0].release(claimed);
      // Released unsent: nothing was published, and the next segments (claimed again) arrive intact.
      for (int k = 0; k < 3; k++) {
        Frame f = t[0].acquireFor(1, 8);
        f.payload().bytes().putFloat(f.payload().start(), 1.5f + k).putFloat(f.payload().start() + 4, -2f * k);
        f.payload().size(8);
        f.header(1, 0, k, 0, 0, DType.F32.wireCode(), ReduceOp.SUM.wireCode(), -1, 0, 2, 0);
        t[0].send(1, f);
        Frame got = t[1].receive(0, 0, k, t[1].nanoTime() + 5_000_000_000L);
        org.junit.jupiter.api.Assertions.assertNotNull(got, "segment " + k);
        try {
          assertEquals(8, got.payload().size());
          java.nio.ByteBuffer b = got.payload().view(8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
          assertEquals(1.5f + k, b.getFloat(b.position()), "segment " + k);
          assertEquals(-2f * k, b.getFloat(b.position() + 4), "segment " + k);
        } finally {
          t[1].release(got);
        }
      }
      assertTrue(cluster.endpoint(0).sharedMemoryClaims() >= 3, "the segments were written into the ring");
      t[0].close();
      t[1].close();
      assertEquals(0, cluster.endpoint(0).outstandingFrames());
    }
  }

  @Test
  void shouldDropFramesOfAGroupThatIsNoLongerRegistered() throws Exception {
    try (TcpCluster cluster = new TcpCluster(2, CHECKED)) {
      TcpTransport[] t = new TcpTransport[2];
      List<Outcome<Object>> joined = GroupHarness.runRanks(2, LIMIT,
          r -> t[r] = cluster.endpoint(r).join("stage-7-attempt-0", r, cluster.addresses()));
      joined.forEach(o -> assertEquals(null, o.error));
      t[1].close();
      Frame f = t[0].acquire(16);
      f.payload().size(16);
      f.header(1, 0, 0, 0, 0, DType.F32.wireCode(), ReduceOp.SUM.wireCode(), -1, 0, 4, 0);
      t[0].send(1, f);
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (cluster.endpoint(1).rejectedFrames() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertEquals(1, cluster.endpoint(1).rejectedFrames(), "the stale frame is dropped, not delivered");
      t[0].close();
    }
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void shouldFailPeersFastNamingTheRankWhoseEndpointDiesMidOperation(String progress) throws Exception {
    int n = 4;
    try (TcpCluster cluster = new TcpCluster(n, checked(progress))) {
      List<Communicator> group = cluster.group("dies");
      List<Outcome<Object>> outcomes = GroupHarness.runAll(group, LIMIT, comm -> {
        if (comm.rank() == 2) {
          Thread.sleep(200);
          cluster.endpoint(2).close();
          return "died";
        }
        float[] big = new float[4 << 20];
        for (int i = 0; i < 50; i++) {
          comm.allReduce(DataBuffer.of(big), ReduceOp.SUM,
              CollectiveOptions.DEFAULT.withTimeout(Duration.ofSeconds(30)));
        }
        return null;
      });
      for (Outcome<Object> o : outcomes) {
        if (o.rank == 2) {
          continue;
        }
        assertInstanceOf(CollectiveException.class, o.error, o.toString());
        assertTrue(o.elapsedMs < 200 + 2000, o + " took too long");
        assertTrue(o.error.getMessage().contains("rank 2"), o.toString());
      }
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldNoticeAPeerLostWhileIdle() throws Exception {
    int n = 3;
    try (TcpCluster cluster = new TcpCluster(n, CHECKED)) {
      List<Communicator> group = cluster.group("idle");
      GroupHarness.run(group, LIMIT, comm -> {
        comm.barrier();
        return null;
      });
      cluster.endpoint(1).close();
      for (int r : new int[] {0, 2}) {
        Communicator c = group.get(r);
        long deadline = System.nanoTime() + 2_000_000_000L;
        CollectiveException seen = null;
        while (seen == null && System.nanoTime() < deadline) {
          try {
            c.checkHealth();
            Thread.sleep(5);
          } catch (CollectiveException e) {
            seen = e;
          }
        }
        // Either this rank's own notice of rank 1 leaving or the first rank's ABORT, both naming rank 1.
        assertInstanceOf(CollectiveException.class, seen, "rank " + r);
        assertTrue(seen instanceof PeerLostException || seen instanceof RemoteFailureException, seen.toString());
        assertTrue(seen.getMessage().contains("rank 1 ("), seen.getMessage());
        assertThrows(CollectiveException.class, () -> c.allReduce(new float[1], ReduceOp.SUM));
      }
      GroupHarness.closeAll(group);
    }
  }
}
