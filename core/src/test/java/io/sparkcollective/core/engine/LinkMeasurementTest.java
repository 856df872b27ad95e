package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.algorithm.AllReduceCostModel;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.GroupHarness.Outcome;
import io.sparkcollective.core.testing.TcpCluster;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A group past the table's four processes, not told its link, measures it before its first AUTO all-reduce
 * (LinkProbe): over real sockets, every rank ends with the same measured link, the all-reduces that follow are
 * right at every size (ranks choosing differently would fail them as a mismatch), concurrent first calls on two
 * tags measure once, the next group of the same executors takes their figures without a probe, a tag's thousandth
 * call measures again (a probe) while another tag's calls go on, and a rank that never comes fails the others
 * within the call's timeout, naming the measurement.
 */
@Timeout(180)
class LinkMeasurementTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);
  private static final int RANKS = 6;

  private static CollectiveConfig config(String measure) {
    Map<String, String> settings = new HashMap<>();
    // Every peer over a socket: six processes with a network between them.
    settings.put(CollectiveConfig.SHARED_MEMORY_BYTES, "0");
    settings.put(CollectiveConfig.MEASURE_LINK, measure);
    return CollectiveConfig.from(settings);
  }

  private static float value(int rank, int i) {
    return (rank * 7 + i) % 13;
  }

  private static void checkSums(List<float[]> out, int len) {
    for (int i = 0; i < len; i++) {
      float exact = 0;
      for (int r = 0; r < out.size(); r++) {
        exact += value(r, i);
      }
      for (int r = 0; r < out.size(); r++) {
        if (out.get(r)[i] != exact) {
          assertEquals(exact, out.get(r)[i], "rank " + r + ", element " + i + " of " + len);
        }
      }
    }
  }

  /** One AUTO all-reduce of {@code len} elements on every rank of {@code group}, its sums checked. */
  private static void sumAndCheck(List<Communicator> group, int len) throws Exception {
    checkSums(GroupHarness.run(group, LIMIT, comm -> {
      float[] x = input(comm.rank(), len);
      comm.allReduce(x, ReduceOp.SUM);
      return x;
    }), len);
  }

  private static float[] input(int rank, int len) {
    float[] x = new float[len];
    for (int i = 0; i < len; i++) {
      x[i] = value(rank, i);
    }
    return x;
  }

  /** The link every rank of {@code group} measured last, the same on all, after {@code measurements} of them. */
  private static AllReduceCostModel agreedLink(List<Communicator> group, int measurements) {
    AllReduceCostModel first = ((EngineCommunicator) group.get(0)).measuredLink();
    assertNotNull(first, "rank 0 did not measure the link");
    for (Communicator c : group) {
      assertEquals(measurements, ((EngineCommunicator) c).measurements(), "rank " + c.rank() + "'s measurements");
      assertEquals(first, ((EngineCommunicator) c).measuredLink(), "rank " + c.rank() + "'s link");
    }
    return first;
  }

  @Test
  void shouldMeasureTheLinkOnceAndAgreeOnIt() throws Exception {
    try (TcpCluster cluster = new TcpCluster(RANKS, config("true"))) {
      List<Communicator> group = cluster.group("measured");
      try {
        for (Communicator c : group) {
          assertNull(((EngineCommunicator) c).measuredLink(), "measured before any all-reduce");
        }
        for (int len : new int[] {1, 3000, 1 << 20}) {
          sumAndCheck(group, len);
        }
        AllReduceCostModel first = agreedLink(group, 1);
        // The next group of these executors takes their figures without a probe, and so the same link.
        List<Communicator> next = cluster.group("measured-next");
        try {
          sumAndCheck(next, 3000);
          assertEquals(first, agreedLink(next, 1));
          for (Communicator c : next) {
            assertEquals(0, ((EngineCommunicator) c).probes(), "rank " + c.rank() + " of the next group probed");
          }
        } finally {
          GroupHarness.closeAll(next);
        }
        // Loopback sockets between six ranks on a shared machine: faster than 100 Mbit/s, a message under 50 ms.
        assertTrue(first.linkBytesPerSecond() > 12.5e6, "link " + first.linkBytesPerSecond() + " B/s");
        assertTrue(first.latencySeconds() > 0 && first.latencySeconds() < 0.05, "latency " + first.latencySeconds());
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }

  @Test
  void shouldMeasureAgainWhenATagReachesItsThousandthCallWhileOtherTagsKeepTheFirst() throws Exception {
    try (TcpCluster cluster = new TcpCluster(RANKS, config("true"))) {
      List<Communicator> group = cluster.group("again");
      try {
        int len = 300;
        List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
          float[] x = null;
          for (long call = 0; call <= EngineCommunicator.REMEASURE_AFTER_CALLS; call++) {
            x = input(comm.rank(), len);
            comm.allReduce(DataBuffer.of(x), ReduceOp.SUM, CollectiveOptions.DEFAULT.withTag(3));
            // Another tag's calls, fewer, in between: they keep the first measurement.
            if (call % 100 == 0) {
              comm.allReduce(DataBuffer.of(input(comm.rank(), len)), ReduceOp.SUM,
                  CollectiveOptions.DEFAULT.withTag(4));
            }
          }
          return x;
        });
        checkSums(out, len);
        agreedLink(group, 2);
        for (Communicator c : group) {
          assertTrue(((EngineCommunicator) c).probes() >= 1, "rank " + c.rank() + " measured again without a probe");
        }
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }

  /**
   * Three executors on three hosts (loopback addresses of their own, shared memory off as between hosts) measure
   * their link: the table was measured between processes of one host. The same three on one host keep to the
   * table.
   */
  @Test
  void shouldMeasureInAGroupOfThreeHostsButNotOfThreeExecutorsOfOneHost() throws Exception {
    int len = 4000;
    try (TcpCluster hosts = new TcpCluster(config("true"), "127.0.0.1", "127.0.0.2", "127.0.0.3")) {
      List<Communicator> group = hosts.group("three-hosts");
      try {
        sumAndCheck(group, len);
        agreedLink(group, 1);
      } finally {
        GroupHarness.closeAll(group);
      }
    }
    try (TcpCluster oneHost = new TcpCluster(3, config("true"))) {
      List<Communicator> group = oneHost.group("one-host");
      try {
        sumAndCheck(group, len);
        for (Communicator c : group) {
          assertNull(((EngineCommunicator) c).measuredLink(), "rank " + c.rank() + " of one host measured");
        }
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }

  @Test
  void shouldNotMeasureWhenToldNotTo() throws Exception {
    try (TcpCluster cluster = new TcpCluster(RANKS, config("false"))) {
      List<Communicator> group = cluster.group("assumed");
      try {
        sumAndCheck(group, 5000);
        for (Communicator c : group) {
          assertNull(((EngineCommunicator) c).measuredLink(), "rank " + c.rank());
        }
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }

  @Test
  void shouldMeasureOnceWhenTheFirstCallsComeOnTwoTagsAtOnce() throws Exception {
    try (TcpCluster cluster = new TcpCluster(RANKS, config("true"))) {
      List<Communicator> group = cluster.group("two-tags");
      try {
        int len = 20_000;
        List<float[][]> out = GroupHarness.run(group, LIMIT, comm -> {
          float[] a = input(comm.rank(), len);
          float[] b = input(comm.rank(), len);
          // Which tag's call measures differs from rank to rank; the measurement runs on the group's own stream.
          CompletableFuture<Void> onOne = comm.allReduceAsync(DataBuffer.of(a), ReduceOp.SUM,
              CollectiveOptions.DEFAULT.withTag(1));
          comm.allReduce(DataBuffer.of(b), ReduceOp.SUM, CollectiveOptions.DEFAULT.withTag(2));
          onOne.get();
          return new float[][] {a, b};
        });
        for (int v = 0; v < 2; v++) {
          int which = v;
          checkSums(out.stream().map(x -> x[which]).collect(java.util.stream.Collectors.toList()), len);
        }
        agreedLink(group, 1);
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }

  @Test
  void shouldFailTheOthersWithinTheTimeoutWhenARankNeverComes() throws Exception {
    try (TcpCluster cluster = new TcpCluster(RANKS, config("true"))) {
      List<Communicator> group = cluster.group("absent");
      try {
        List<Outcome<Void>> outcomes = GroupHarness.runAll(group, LIMIT, comm -> {
          if (comm.rank() != 3) {
            comm.allReduce(DataBuffer.of(new float[100]), ReduceOp.SUM,
                CollectiveOptions.DEFAULT.withTimeout(Duration.ofSeconds(2)));
          }
          return null;
        });
        for (Outcome<Void> o : outcomes) {
          if (o.rank == 3) {
            continue;
          }
          assertInstanceOf(CollectiveException.class, o.error, o.toString());
          assertTrue(o.elapsedMs < 20_000, o.toString());
        }
        // The ranks that waited on rank 3 name the measurement; the others hear of their failure.
        assertTrue(outcomes.stream().anyMatch(o -> o.error != null
            && o.error.getMessage().contains("link measurement")), outcomes.toString());
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }
}
