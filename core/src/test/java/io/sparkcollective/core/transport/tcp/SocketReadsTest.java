package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.tcp.direct.CallerDrivenIo;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How a caller-driven connection's socket is read, counted by the endpoint, while two ranks over plain TCP run
 * thousands of small all-reduces and some of several segments (each checked against its exact sum).
 *
 * <p>A socket is read only until a read comes back short: a short read means the socket held no more, so the
 * read after it would be a system call spent to find nothing (one per message at small sizes, on the path of
 * every reply). Reading on until a read returned nothing, an endpoint counted one such read for every other
 * operation or more.
 *
 * <p>A thread that spins for a frame reads the connection that rank's frames came through last before it polls:
 * when the frame is there, the poll's system call is spared. Polling before every read, an endpoint found no
 * frame that way.
 */
@Timeout(120)
class SocketReadsTest {
  private static final int SMALL_OPS = 3000;

  /** Reads that found nothing stay a small fraction of the operations: well under 1% here, at most 20% allowed. */
  @Test
  void shouldNotReadAgainAfterAShortRead() throws Exception {
    long[] empty = run("short-reads", 50, 300_000, CallerDrivenIo::emptyReads);
    int ops = 2 * SMALL_OPS + 50;
    for (int e = 0; e < 2; e++) {
      assertTrue(empty[e] <= ops / 5, "endpoint " + e + ": " + empty[e] + " reads found nothing in " + ops
          + " all-reduces");
    }
  }

  /**
   * Many small replies are found by reading the awaited connection without a poll: about half of them here (the
   * others mostly came with the read before, as the partner's next message can follow its last one, and cost no
   * system call at all); at least a quarter required. The large all-reduces between the small ones fill the
   * socket, queueing writes that only the poll flushes (every turn polls while they wait).
   */
  @Test
  void shouldReadTheAwaitedConnectionWithoutPollingFirst() throws Exception {
    long[] found = run("unpolled-reads", 20, 2_000_000, CallerDrivenIo::unpolledReads);
    for (int e = 0; e < 2; e++) {
      assertTrue(found[e] >= SMALL_OPS / 2, "endpoint " + e + ": " + found[e] + " of " + 2 * SMALL_OPS
          + " small all-reduces' replies found by reading their connection without a poll");
    }
  }

  /**
   * Runs {@link #SMALL_OPS} one-float all-reduces, {@code largeOps} of {@code largeFloats}, then as many small
   * ones again on two ranks over TCP; returns how far {@code counter} of each endpoint moved meanwhile.
   */
  private static long[] run(String name, int largeOps, int largeFloats, ToLongFunction<CallerDrivenIo> counter)
      throws Exception {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, "0"));
    try (TcpCluster cluster = new TcpCluster(2, config)) {
      List<Communicator> comms = cluster.group(name);
      long[] moved = new long[2];
      for (int e = 0; e < 2; e++) {
        moved[e] = -counter.applyAsLong(cluster.endpoint(e).callerIo());
      }
      GroupHarness.run(comms, Duration.ofSeconds(90), comm -> {
        int r = comm.rank();
        smallOps(comm, r, 0);
        float[] big = new float[largeFloats];
        float[] expected = new float[largeFloats];
        for (int i = 0; i < largeOps; i++) {
          for (int j = 0; j < largeFloats; j++) {
            big[j] = r == 0 ? j + i : -2 * j;
            expected[j] = (float) (i - j);
          }
          comm.allReduce(big, ReduceOp.SUM);
          assertArrayEquals(expected, big, "large all-reduce " + i);
        }
        smallOps(comm, r, SMALL_OPS);
        return null;
      });
      for (int e = 0; e < 2; e++) {
        moved[e] += counter.applyAsLong(cluster.endpoint(e).callerIo());
      }
      for (Communicator c : comms) {
        c.close();
      }
      return moved;
    }
  }

  private static void smallOps(Communicator comm, int r, int from) {
    float[] one = new float[1];
    for (int i = from; i < from + SMALL_OPS; i++) {
      one[0] = r == 0 ? i : 0.5f;
      comm.allReduce(one, ReduceOp.SUM);
      assertEquals(i + 0.5f, one[0], "all-reduce " + i);
    }
  }
}
