package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A thread that spins for a frame reads the connection that rank's frames came through last, without polling
 * first: when the frame is there the poll's system call is spared on the path of every reply. Here two ranks
 * over plain TCP run thousands of small all-reduces, then some whose segments fill the socket (queued writes,
 * flushed only by the poll, which every turn does while they wait) and then small ones again: the results are
 * right throughout, and many small replies are found by such a read: about 45% of them here (the others mostly
 * came with the read before, as the partner's next message can follow its last one, and cost no system call at
 * all); at least a quarter required. Polling before every read, an endpoint found none that way.
 */
@Timeout(120)
class UnpolledReadTest {
  private static final int SMALL_OPS = 3000;
  private static final int LARGE_OPS = 20;
  private static final int LARGE_FLOATS = 2_000_000;

  @Test
  void shouldReadTheSourcesConnectionWithoutPollingFirst() throws Exception {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, "0"));
    try (TcpCluster cluster = new TcpCluster(2, config)) {
      List<Communicator> comms = cluster.group("unpolled-reads");
      long[] before = {cluster.endpoint(0).callerIo().unpolledReads(), cluster.endpoint(1).callerIo().unpolledReads()};
      GroupHarness.run(comms, Duration.ofSeconds(90), comm -> {
        int r = comm.rank();
        smallOps(comm, r, 0);
        float[] big = new float[LARGE_FLOATS];
        float[] expected = new float[LARGE_FLOATS];
        for (int i = 0; i < LARGE_OPS; i++) {
          for (int j = 0; j < LARGE_FLOATS; j++) {
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
        long found = cluster.endpoint(e).callerIo().unpolledReads() - before[e];
        assertTrue(found >= SMALL_OPS / 2, "endpoint " + e + ": " + found + " of " + 2 * SMALL_OPS
            + " small all-reduces' replies found by reading their connection without a poll");
      }
      for (Communicator c : comms) {
        c.close();
      }
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
