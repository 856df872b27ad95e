package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

/**
 * Vectors in direct little-endian buffers go from where they lie to the socket (header and segment in one
 * gathering write), over plain caller-driven TCP: every collective and point-to-point call still gives the exact
 * result (compared with sums and copies worked out here), the endpoints count those writes, and the caller's
 * memory is never read after the call that sent it returned, also when the socket could not take a segment at
 * once (its rest is copied).
 */
@Timeout(120)
class SendFromMemoryTest {
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
