package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.tcp.direct.CallerDrivenIo;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Vectors in direct little-endian buffers go from where they lie to the socket (header and segment in one
 * gathering write) and from the socket to where they lie (a waiting rank offers the range for the payload it
 * expects), over plain caller-driven TCP: every collective and point-to-point call still gives the exact result
 * (compared with sums and copies worked out here), the endpoints count both, and the caller's memory is neither
 * read nor written after its call returned: a segment the socket did not take at once has its rest copied, and a
 * payload still arriving into a range whose call failed moves into memory of the endpoint's own.
 */
@Timeout(120)
class DirectVectorTcpTest {
  private static final CollectiveConfig TCP = CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, "0"));

  /**
   * Three ranks, direct vectors of one element to several segments (segments are 512 KiB): all-reduce, all-gather,
   * broadcast and send/receive give exact results, and every endpoint sent segments from the vectors' memory.
   */
  @Test
  void shouldSendDirectVectorsFromWhereTheyLie() throws Exception {
    int[] lengths = {1, 1000, 300_000};
    try (TcpCluster cluster = new TcpCluster(3, TCP)) {
      List<Communicator> comms = cluster.group("send-from");
      long[] before = counts(cluster, CallerDrivenIo::writtenFrom);
      GroupHarness.run(comms, Duration.ofSeconds(90), comm -> {
        int r = comm.rank();
        for (int n : lengths) {
          ByteBuffer v = direct(n);
          for (int i = 0; i < n; i++) {
            put(v, i, (r + 1) * (i % 977) + r);
          }
          comm.allReduce(DataBuffer.of(v, DType.F32), ReduceOp.SUM);
          for (int i = 0; i < n; i++) {
            assertEquals(6f * (i % 977) + 3, get(v, i), "all-reduce of " + n + " at " + i);
          }
          ByteBuffer mine = direct(n);
          ByteBuffer all = direct(3 * n);
          for (int i = 0; i < n; i++) {
            put(mine, i, r * 1000f + i % 1009);
          }
          comm.allGather(DataBuffer.of(mine, DType.F32), DataBuffer.of(all, DType.F32));
          for (int k = 0; k < 3; k++) {
            for (int i = 0; i < n; i++) {
              assertEquals(k * 1000f + i % 1009, get(all, k * n + i),
                  "all-gather of " + n + ", rank " + k + " at " + i);
            }
          }
          ByteBuffer b = direct(n);
          for (int i = 0; i < n; i++) {
            put(b, i, r == 2 ? -i : 7);
          }
          comm.broadcast(DataBuffer.of(b, DType.F32), 2);
          for (int i = 0; i < n; i++) {
            assertEquals(-i, get(b, i), 0f, "broadcast of " + n + " at " + i);
          }
          ByteBuffer p = direct(n);
          if (r == 0) {
            for (int i = 0; i < n; i++) {
              put(p, i, i * 0.5f);
            }
            comm.send(DataBuffer.of(p, DType.F32), 1, CollectiveOptions.DEFAULT);
          } else if (r == 1) {
            comm.recv(DataBuffer.of(p, DType.F32), 0, CollectiveOptions.DEFAULT);
            for (int i = 0; i < n; i++) {
              assertEquals(i * 0.5f, get(p, i), "received " + n + " at " + i);
            }
          }
        }
        return null;
      });
      long[] after = counts(cluster, CallerDrivenIo::writtenFrom);
      for (int e = 0; e < 3; e++) {
        // Each endpoint sends at least the all-reduce's and the all-gather's segments of every length that way.
        assertTrue(after[e] - before[e] >= 2 * lengths.length, "endpoint " + e + " sent " + (after[e] - before[e])
            + " segments from the vectors' memory");
      }
      for (Communicator c : comms) {
        c.close();
      }
    }
  }

  /**
   * The receiver waits first: the payload of the segment it waits for is read from the socket into its vector,
   * and the values are the sender's.
   */
  @Test
  void shouldReceiveIntoTheVectorAPayloadItWaitsFor() throws Exception {
    int n = 100_000;
    try (TcpCluster cluster = new TcpCluster(2, TCP)) {
      List<Communicator> comms = cluster.group("posted");
      long before = cluster.endpoint(1).callerIo().readIntoPosted();
      GroupHarness.run(comms, Duration.ofSeconds(60), comm -> {
        ByteBuffer v = direct(n);
        for (int round = 0; round < 5; round++) {
          if (comm.rank() == 0) {
            Thread.sleep(100); // the receiver is waiting by then
            for (int i = 0; i < n; i++) {
              put(v, i, i * 3 + round);
            }
            comm.send(DataBuffer.of(v, DType.F32), 1, CollectiveOptions.DEFAULT);
          } else {
            comm.recv(DataBuffer.of(v, DType.F32), 0, CollectiveOptions.DEFAULT);
            for (int i = 0; i < n; i++) {
              assertEquals(i * 3 + round, get(v, i), "round " + round + " at " + i);
            }
          }
        }
        return null;
      });
      long posted = cluster.endpoint(1).callerIo().readIntoPosted() - before;
      assertTrue(posted >= 5, posted + " of 5 payloads read into the waiting vector");
      for (Communicator c : comms) {
        c.close();
      }
    }
  }

  /**
   * The all-reduces announce the copies they will make (the ring's all-gather, the doubling of halving-doubling)
   * before they start, so every one of those payloads is read into the vector, however early it comes: a 16 MiB
   * vector in segments of 512 KiB (131072 floats) gives, per all-reduce and rank, at two ranks 16 (ring: one chunk
   * of 2 M floats; halving-doubling: one half), at three 22 (ring, two passes of the ring's eight-segment
   * chunks: 2 x 8 + 2 x 3) and at four 24 (halving-doubling: a quarter and a half, 8 + 16). The sums are exact.
   */
  @ParameterizedTest(name = "{0} ranks, {1}")
  @CsvSource({"2, RING, 16", "2, HALVING_DOUBLING, 16", "3, RING, 22", "4, HALVING_DOUBLING, 24"})
  void shouldReadEveryAnnouncedCopyIntoTheVector(int ranks, Algorithm algorithm, int perOp) throws Exception {
    int n = 1 << 22;
    int ops = 3;
    try (TcpCluster cluster = new TcpCluster(ranks, TCP)) {
      List<Communicator> comms = cluster.group("announced");
      long[] before = counts(cluster, CallerDrivenIo::readIntoPosted);
      GroupHarness.run(comms, Duration.ofSeconds(90), comm -> {
        int r = comm.rank();
        ByteBuffer v = direct(n);
        for (int op = 0; op < ops; op++) {
          for (int i = 0; i < n; i++) {
            put(v, i, (r + 1) * (i % 1021) - op);
          }
          comm.allReduce(DataBuffer.of(v, DType.F32), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(algorithm));
          int sumOfRanks = ranks * (ranks + 1) / 2;
          for (int i = 0; i < n; i++) {
            assertEquals(sumOfRanks * (i % 1021) - ranks * op, get(v, i), "op " + op + " at " + i);
          }
        }
        return null;
      });
      long[] after = counts(cluster, CallerDrivenIo::readIntoPosted);
      for (int e = 0; e < ranks; e++) {
        assertEquals((long) perOp * ops, after[e] - before[e], "payloads read into rank " + e + "'s vector");
      }
      GroupHarness.closeAll(comms);
    }
  }

  /**
   * A broadcast's chain announces its copies: three ranks wait in a 16 MiB broadcast before rank 0 sends, and all
   * 32 segments are read into each other rank's vector (without the announcement each segment is offered only
   * when waited for, and those that came before went to frames). An all-gather, which announces its copies the
   * same way, gives every block exactly.
   */
  @Test
  void shouldReadBroadcastPayloadsIntoTheVector() throws Exception {
    int n = 1 << 22;
    int block = 1 << 20;
    try (TcpCluster cluster = new TcpCluster(3, TCP)) {
      List<Communicator> comms = cluster.group("announced-copies");
      long[] before = counts(cluster, CallerDrivenIo::readIntoPosted);
      GroupHarness.run(comms, Duration.ofSeconds(90), comm -> {
        int r = comm.rank();
        ByteBuffer b = direct(n);
        for (int i = 0; i < n; i++) {
          put(b, i, r == 0 ? i % 4099 : -1);
        }
        comm.barrier(CollectiveOptions.DEFAULT);
        if (r == 0) {
          Thread.sleep(200);
        }
        comm.broadcast(DataBuffer.of(b, DType.F32), 0, CollectiveOptions.DEFAULT);
        for (int i = 0; i < n; i++) {
          assertEquals(i % 4099, get(b, i), "broadcast at " + i);
        }
        return null;
      });
      long[] after = counts(cluster, CallerDrivenIo::readIntoPosted);
      assertEquals(0, after[0] - before[0], "payloads read into the root's vector");
      for (int e = 1; e < 3; e++) {
        assertEquals(32, after[e] - before[e], "payloads read into rank " + e + "'s vector");
      }
      GroupHarness.run(comms, Duration.ofSeconds(90), comm -> {
        int r = comm.rank();
        ByteBuffer mine = direct(block);
        ByteBuffer all = direct(3 * block);
        for (int i = 0; i < block; i++) {
          put(mine, i, r * 10_000f + i % 997);
        }
        comm.allGather(DataBuffer.of(mine, DType.F32), DataBuffer.of(all, DType.F32), CollectiveOptions.DEFAULT);
        for (int k = 0; k < 3; k++) {
          for (int i = 0; i < block; i++) {
            assertEquals(k * 10_000f + i % 997, get(all, k * block + i), "all-gather, rank " + k + " at " + i);
          }
        }
        return null;
      });
      GroupHarness.closeAll(comms);
    }
  }

  /**
   * The receiver's call times out while the payload it waits for trickles in (socket buffers of 8 KiB: a window
   * under one TCP segment, a few KiB per 100 ms on loopback). Once the call has failed, its vector does not
   * change any more: the part-read payload moved into a frame of the endpoint's (leaving the offered memory with
   * the reader writing on fails here).
   */
  @Test
  void shouldNotWriteTheVectorAfterTheCallFailed() throws Exception {
    CollectiveConfig trickle = CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, "0",
        CollectiveConfig.SOCKET_BUFFER_BYTES, "8192", CollectiveConfig.SEGMENT_BYTES, "4194304"));
    int n = 1 << 20; // one 4 MiB segment
    try (TcpCluster cluster = new TcpCluster(2, trickle)) {
      List<Communicator> comms = cluster.group("reclaim");
      long before = cluster.endpoint(1).callerIo().reclaimed();
      ByteBuffer received = direct(n);
      byte[] atFailure = new byte[4 * n];
      CountDownLatch receiving = new CountDownLatch(1);
      GroupHarness.run(comms, Duration.ofSeconds(60), comm -> {
        if (comm.rank() == 0) {
          // The payload is read into the vector only if its header arrives after the receiver offered it; sent
          // earlier, the receiver's reads of the group's set-up may take the header and the payload's start into
          // a frame, and the rest follows there.
          assertTrue(receiving.await(30, TimeUnit.SECONDS), "rank 1 never got to its recv");
          Thread.sleep(200);
          ByteBuffer v = direct(n);
          for (int i = 0; i < n; i++) {
            put(v, i, 1 + i);
          }
          try {
            comm.send(DataBuffer.of(v, DType.F32), 1, CollectiveOptions.DEFAULT);
          } catch (RuntimeException e) {
            // The receiver's failure may reach this rank first.
          }
        } else {
          RuntimeException failed = null;
          receiving.countDown();
          try {
            comm.recv(DataBuffer.of(received, DType.F32), 0,
                CollectiveOptions.DEFAULT.withTimeout(Duration.ofMillis(1500)));
          } catch (RuntimeException e) {
            failed = e;
          }
          assertTrue(failed != null, "4 MiB arrived through 8 KiB socket buffers within 1.5 s: nothing was tested");
          received.duplicate().clear().get(atFailure);
        }
        return null;
      });
      long reclaimed = cluster.endpoint(1).callerIo().reclaimed() - before;
      assertTrue(cluster.endpoint(1).callerIo().readIntoPosted() > 0, "the payload was not read into the vector");
      assertEquals(1, reclaimed, "part-read payloads moved out of the vector when its call failed");
      Thread.sleep(1000); // more of the payload arrives meanwhile
      byte[] later = new byte[4 * n];
      received.duplicate().clear().get(later);
      assertTrue(java.util.Arrays.equals(atFailure, later), "the vector changed after its call failed");
      for (Communicator c : comms) {
        c.close();
      }
    }
  }

  /** Vectors in arrays are copied into frames (a socket cannot read the Java heap): nothing is counted. */
  @Test
  void shouldCopyArrayVectors() throws Exception {
    try (TcpCluster cluster = new TcpCluster(2, TCP)) {
      List<Communicator> comms = cluster.group("arrays");
      long[] before = counts(cluster, CallerDrivenIo::writtenFrom);
      GroupHarness.run(comms, Duration.ofSeconds(60), comm -> {
        float[] v = new float[300_000];
        java.util.Arrays.fill(v, comm.rank() + 1);
        comm.allReduce(v, ReduceOp.SUM);
        for (int i = 0; i < v.length; i++) {
          assertEquals(3f, v[i], "at " + i);
        }
        return null;
      });
      long[] after = counts(cluster, CallerDrivenIo::writtenFrom);
      for (int e = 0; e < 2; e++) {
        assertEquals(before[e], after[e], "endpoint " + e + ": segments of a float[] sent without a copy");
      }
      for (Communicator c : comms) {
        c.close();
      }
    }
  }

  /**
   * With socket buffers of 128 KiB (smaller ones stall on loopback: a window under one TCP segment) the socket
   * takes a fraction of a 512 KiB segment; the sender's call returns while the rest is still on its way, and the
   * sender then overwrites its vector. The receiver, held back until then, gets the values as they were when
   * sent: the rest was copied before the call returned (queueing the caller's memory instead fails here).
   */
  @Test
  void shouldNotReadTheCallersMemoryAfterTheSendReturned() throws Exception {
    CollectiveConfig small = CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, "0",
        CollectiveConfig.SOCKET_BUFFER_BYTES, "131072"));
    int n = 1 << 20; // 4 MiB: eight segments
    try (TcpCluster cluster = new TcpCluster(2, small)) {
      List<Communicator> comms = cluster.group("spill");
      long spilledBefore = cluster.endpoint(0).callerIo().spilled();
      CountDownLatch overwritten = new CountDownLatch(1);
      GroupHarness.run(comms, Duration.ofSeconds(90), comm -> {
        ByteBuffer v = direct(n);
        if (comm.rank() == 0) {
          for (int i = 0; i < n; i++) {
            put(v, i, i);
          }
          comm.send(DataBuffer.of(v, DType.F32), 1, CollectiveOptions.DEFAULT);
          for (int i = 0; i < n; i++) {
            put(v, i, Float.NaN);
          }
          overwritten.countDown();
        } else {
          assertTrue(overwritten.await(60, TimeUnit.SECONDS), "the sender's call did not return");
          comm.recv(DataBuffer.of(v, DType.F32), 0, CollectiveOptions.DEFAULT);
          for (int i = 0; i < n; i++) {
            assertEquals(i, get(v, i), "received at " + i);
          }
        }
        return null;
      });
      long spilled = cluster.endpoint(0).callerIo().spilled() - spilledBefore;
      assertTrue(spilled >= 1, "the socket took every segment whole (" + spilled + " copied rests): the test proves "
          + "nothing");
      for (Communicator c : comms) {
        c.close();
      }
    }
  }

  private static ByteBuffer direct(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static void put(ByteBuffer b, int i, float x) {
    b.putFloat(4 * i, x);
  }

  private static float get(ByteBuffer b, int i) {
    return b.getFloat(4 * i);
  }

  private static long[] counts(TcpCluster cluster, java.util.function.ToLongFunction<CallerDrivenIo> counter) {
    long[] c = new long[cluster.addresses().size()];
    for (int e = 0; e < c.length; e++) {
      c[e] = counter.applyAsLong(cluster.endpoint(e).callerIo());
    }
    return c;
  }
}
