package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two endpoints send the DATA of their small operations to each other over one connection, the one the endpoint
 * of the smaller name dialled, so each side's messages carry the acknowledgements of the other's; larger
 * operations keep a connection per direction. A rank that leaves says so over every connection its frames took,
 * and is gone only once all of those notices came; a peer lost with the shared connection fails the other side
 * at once.
 */
@Timeout(120)
class TwoWayConnectionTest {
  private static final Duration LIMIT = Duration.ofSeconds(30);
  /** Floats of an operation that takes the shared connection, and of one that does not. */
  private static final int SMALL = Tuning.TWO_WAY_MAX_BYTES / Float.BYTES;
  private static final int LARGE = SMALL + 1;

  private static CollectiveConfig config(String progress) {
    return CollectiveConfig.from(Map.of(CollectiveConfig.JOIN_TIMEOUT_MS, "10000",
        CollectiveConfig.SHARED_MEMORY_BYTES, "0", CollectiveConfig.PROGRESS, progress));
  }

  /** {@code a->b} seen from the other end. */
  private static String mirrored(String ends) {
    String[] two = ends.split("->");
    return two[1] + "->" + two[0];
  }

  private static TcpTransport transport(TcpCluster cluster, String group, int rank) {
    TcpTransport t = cluster.endpoint(rank).registered(TcpEndpoint.groupId(group), rank);
    assertNotNull(t, "rank " + rank + " of " + group + " is not registered");
    return t;
  }

  /** The rank (0 or 1, on endpoint 0 or 1) whose endpoint has the larger name. */
  private static int larger(TcpCluster cluster) {
    return cluster.endpoint(0).addressKey().compareTo(cluster.endpoint(1).addressKey()) > 0 ? 0 : 1;
  }

  private static void awaitTrue(java.util.function.BooleanSupplier condition, String what) throws Exception {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < until, "not within 10 s: " + what);
      Thread.sleep(2);
    }
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void smallOperationsGoBothWaysOverTheConnectionTheSmallerNameDialled(String progress) throws Exception {
    CollectiveConfig c = config(progress);
    try (TcpCluster cluster = new TcpCluster(List.of(c, c))) {
      String name = "two-way-" + progress;
      List<Communicator> g = cluster.group(name);
      float[][] small = new float[2][];
      float[][] large = new float[2][];
      GroupHarness.run(g, LIMIT, comm -> {
        int r = comm.rank();
        for (int i = 0; i < 50; i++) {
          small[r] = new float[SMALL];
          large[r] = new float[LARGE];
          for (int k = 0; k < SMALL; k++) {
            small[r][k] = r * 1000 + i + k;
            large[r][k] = r * 3000 - i + k;
          }
          large[r][SMALL] = r + 0.5f;
          comm.allReduce(small[r], ReduceOp.SUM);
          comm.allReduce(large[r], ReduceOp.SUM);
        }
        return null;
      });
      float[] expectSmall = new float[SMALL];
      float[] expectLarge = new float[LARGE];
      for (int k = 0; k < SMALL; k++) {
        expectSmall[k] = (0 * 1000 + 49 + k) + (1000 + 49 + k);
        expectLarge[k] = (0 * 3000 - 49 + k) + (3000 - 49 + k);
      }
      expectLarge[SMALL] = 0.5f + 1.5f;
      for (int r = 0; r < 2; r++) {
        assertArrayEquals(expectSmall, small[r], "rank " + r + ", small");
        assertArrayEquals(expectLarge, large[r], "rank " + r + ", large");
      }
      TcpTransport t0 = transport(cluster, name, 0);
      TcpTransport t1 = transport(cluster, name, 1);
      String small0 = t0.connectionTo(1, true);
      String small1 = t1.connectionTo(0, true);
      assertNotNull(small0);
      assertNotNull(small1);
      assertEquals(mirrored(small0), small1, "the two ranks send their small operations over different connections");
      int big = larger(cluster);
      TcpTransport smallerSide = big == 0 ? t1 : t0;
      TcpTransport largerSide = big == 0 ? t0 : t1;
      assertEquals(smallerSide.connectionTo(big, false), smallerSide.connectionTo(big, true),
          "the endpoint of the smaller name sends everything over the connection it dialled");
      assertNotEquals(largerSide.connectionTo(1 - big, false), largerSide.connectionTo(1 - big, true),
          "the larger operations of the endpoint of the larger name go over its own connection");
      GroupHarness.closeAll(g);
    }
  }

  /**
   * The root on the endpoint of the larger name sends a large broadcast over its own connection and then a small
   * one over the shared connection, and leaves at once: the receiver gets both whole, and counts the root gone
   * only once the notices over both connections came.
   */
  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void aRankThatLeavesIsGoneOnlyOnceItsNoticeCameOverEveryConnection(String progress) throws Exception {
    CollectiveConfig c = config(progress);
    try (TcpCluster cluster = new TcpCluster(List.of(c, c))) {
      int root = larger(cluster);
      int receiver = 1 - root;
      int n = 1 << 19;
      for (int round = 0; round < 10; round++) {
        String name = "leave-" + progress + "-" + round;
        List<Communicator> g = cluster.group(name);
        TcpTransport t = transport(cluster, name, receiver);
        float[][] got = new float[2][];
        int seed = round;
        List<GroupHarness.Outcome<Object>> outcomes = GroupHarness.runAll(g, LIMIT, comm -> {
          float[] big = new float[n];
          float[] tail = new float[16];
          if (comm.rank() == root) {
            for (int k = 0; k < n; k++) {
              big[k] = k + seed;
            }
            Arrays.fill(tail, seed + 0.25f);
          }
          comm.broadcast(big, root);
          comm.broadcast(tail, root);
          if (comm.rank() == root) {
            comm.close();
          } else {
            got[0] = big;
            got[1] = tail;
          }
          return null;
        });
        for (GroupHarness.Outcome<Object> o : outcomes) {
          assertNull(o.error, "round " + round + ": " + o);
        }
        assertEquals(0f + seed, got[0][0]);
        assertEquals(n - 1f + seed, got[0][n - 1]);
        float[] tail = new float[16];
        Arrays.fill(tail, seed + 0.25f);
        assertArrayEquals(tail, got[1]);
        awaitTrue(() -> t.hasLeft(root), "the root gone, round " + round + ": " + t.leavesFrom(root) + " notices");
        assertEquals(2, t.leavesFrom(root), "the root is gone only once both of its LEAVE notices came");
        g.get(receiver).close();
      }
    }
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void aRankOnTheSmallerNameLeavesOverItsOneConnection(String progress) throws Exception {
    CollectiveConfig c = config(progress);
    try (TcpCluster cluster = new TcpCluster(List.of(c, c))) {
      int big = larger(cluster);
      String name = "leave-once-" + progress;
      List<Communicator> g = cluster.group(name);
      TcpTransport t = transport(cluster, name, big);
      GroupHarness.run(g, LIMIT, comm -> {
        comm.allReduce(new float[4], ReduceOp.SUM);
        return null;
      });
      g.get(1 - big).close();
      awaitTrue(() -> t.hasLeft(1 - big), "the LEAVE of rank " + (1 - big));
      assertEquals(1, t.leavesFrom(1 - big));
      g.get(big).close();
    }
  }

  /** Notices decoded from an authenticated peer's connection, counted as they come. */
  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void leaveNoticesAreCountedAndAnImpossibleCountFailsTheGroup(String progress) throws Exception {
    CollectiveConfig c = config(progress);
    try (TcpCluster cluster = new TcpCluster(List.of(c, c))) {
      String name = "leave-count-" + progress;
      List<Communicator> g = cluster.group(name);
      long gid = TcpEndpoint.groupId(name);
      TcpTransport t = transport(cluster, name, 0);
      String from = cluster.endpoint(1).addressKey();
      GroupRegistry registry = cluster.endpoint(0).registry();
      registry.onLeave(from, gid, 1, 0, 2);
      assertFalse(t.hasLeft(1), "one notice of two");
      g.get(0).checkHealth();
      registry.onLeave(from, gid, 1, 0, 2);
      assertTrue(t.hasLeft(1), "two notices of two");
      CollectiveException left = assertThrows(CollectiveException.class, () -> g.get(0).checkHealth());
      assertTrue(left.getMessage().contains("left group"), left.getMessage());

      String other = name + "-bad";
      List<Communicator> h = cluster.group(other);
      TcpTransport u = transport(cluster, other, 0);
      cluster.endpoint(0).registry().onLeave(from, TcpEndpoint.groupId(other), 1, 0, 3);
      CollectiveException e = assertThrows(CollectiveException.class, () -> h.get(0).checkHealth());
      assertTrue(e.getMessage().contains("LEAVE") && e.getMessage().contains("3 connections")
          && e.getMessage().contains("rank 1"), e.getMessage());
      assertFalse(u.hasLeft(1));
      GroupHarness.closeAll(g);
      GroupHarness.closeAll(h);
    }
  }

  /**
   * A connection of a rank's endpoint closes after one of its two LEAVE notices came: while another connection is
   * open, what the rank sent over that one is still coming, so it is neither lost nor gone; once none is open, it
   * is gone (it left); a rank without any notice is lost.
   */
  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void aConnectionClosingAfterPartOfTheNoticesIsNoLoss(String progress) throws Exception {
    CollectiveConfig c = config(progress);
    try (TcpCluster cluster = new TcpCluster(List.of(c, c))) {
      String name = "half-left-" + progress;
      List<Communicator> g = cluster.group(name);
      TcpTransport t = transport(cluster, name, 0);
      String from = cluster.endpoint(1).addressKey();
      GroupRegistry registry = cluster.endpoint(0).registry();
      registry.onLeave(from, TcpEndpoint.groupId(name), 1, 0, 2);
      registry.endpointLost(from, "one connection closed", true);
      assertFalse(t.hasLeft(1));
      g.get(0).checkHealth();
      registry.endpointLost(from, "the last connection closed", false);
      assertTrue(t.hasLeft(1));
      CollectiveException left = assertThrows(CollectiveException.class, () -> g.get(0).checkHealth());
      assertTrue(left.getMessage().contains("left group"), left.getMessage());

      String other = name + "-silent";
      List<Communicator> h = cluster.group(other);
      registry.endpointLost(from, "one connection closed", true);
      CollectiveException lost = assertThrows(CollectiveException.class, () -> h.get(0).checkHealth());
      assertTrue(lost.getMessage().contains("lost rank 1") && lost.getMessage().contains("one connection closed"),
          lost.getMessage());
      GroupHarness.closeAll(g);
      GroupHarness.closeAll(h);
    }
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void aPeerLostWithTheSharedConnectionFailsTheOtherSideAtOnce(String progress) throws Exception {
    CollectiveConfig c = config(progress);
    try (TcpCluster cluster = new TcpCluster(List.of(c, c))) {
      int big = larger(cluster);
      String name = "lost-" + progress;
      List<Communicator> g = cluster.group(name);
      GroupHarness.run(g, LIMIT, comm -> {
        for (int i = 0; i < 20; i++) {
          comm.allReduce(new float[8], ReduceOp.SUM);
        }
        return null;
      });
      assertNotEquals(transport(cluster, name, big).connectionTo(1 - big, false),
          transport(cluster, name, big).connectionTo(1 - big, true));
      // The endpoint of the smaller name goes: the other side loses the connection both sides' small
      // operations took, and with it the rank.
      cluster.endpoint(1 - big).close();
      long t0 = System.nanoTime();
      CollectiveException e = assertThrows(CollectiveException.class,
          () -> g.get(big).allReduce(new float[8], ReduceOp.SUM));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(ms < 5000, "rank " + big + " learnt of its lost peer after " + ms + " ms: " + e);
      assertTrue(e.getMessage().contains("rank " + (1 - big)), e.getMessage());
    }
  }
}
