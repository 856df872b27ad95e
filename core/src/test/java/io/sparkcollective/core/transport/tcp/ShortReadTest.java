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
 * A caller-driven connection is read when its socket polls ready, and only until a read comes back short: a
 * short read means the socket held no more, so the read after it would be a system call spent to find nothing
 * (one per message at small sizes, on the path of every reply). Here two ranks over plain TCP run thousands of
 * small all-reduces and some of several segments: the results are right and reads that found nothing stay a
 * small fraction of the operations (about 3% here; at most 20% allowed). Reading on until a read returned nothing,
 * an endpoint counted one for every other operation or more.
 */
@Timeout(120)
class ShortReadTest {
  private static final int SMALL_OPS = 3000;
  private static final int LARGE_OPS = 50;
  private static final int LARGE_FLOATS = 300_000;

  @Test
  void shouldNotReadAgainAfterAShortRead() throws Exception {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, "0"));
    try (TcpCluster cluster = new TcpCluster(2, config)) {
      List<Communicator> comms = cluster.group("short-reads");
      long[] before = {cluster.endpoint(0).callerIo().emptyReads(), cluster.endpoint(1).callerIo().emptyReads()};
      GroupHarness.run(comms, Duration.ofSeconds(90), comm -> {
        int r = comm.rank();
        float[] one = new float[1];
        for (int i = 0; i < SMALL_OPS; i++) {
          one[0] = r == 0 ? i : 0.5f;
          comm.allReduce(one, ReduceOp.SUM);
          assertEquals(i + 0.5f, one[0], "all-reduce " + i);
        }
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
        return null;
      });
      for (int e = 0; e < 2; e++) {
        long empty = cluster.endpoint(e).callerIo().emptyReads() - before[e];
        assertTrue(empty <= (SMALL_OPS + LARGE_OPS) / 5, "endpoint " + e + ": " + empty + " reads found nothing in "
            + (SMALL_OPS + LARGE_OPS) + " all-reduces");
      }
      for (Communicator c : comms) {
        c.close();
      }
    }
  }
}
