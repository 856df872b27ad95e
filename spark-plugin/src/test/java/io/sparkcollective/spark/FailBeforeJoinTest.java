package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A barrier task that fails before it ever asks for its communicator, by an exception or by its executor's
 * death, fails its peers (waiting to form the group) within 2 s, not at the join timeout; Spark's retry of
 * the stage then gives the right sum. Real executor JVMs (local-cluster, 2 executors x 2 cores).
 */
@Timeout(300)
class FailBeforeJoinTest {
  /** Where the tests' executors leave their reports; removed after the class. */
  @org.junit.jupiter.api.io.TempDir
  static Path scratch;

  private static final int TASKS = 4;
  private static final int LENGTH = 10_007;
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() {
    sc = new JavaSparkContext(SparkTests.withPlugin("local-cluster[2,2,1024]", "fail-before-join"));
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  private static float[] gradient(int partition) {
    float[] g = new float[LENGTH];
    for (int i = 0; i < LENGTH; i++) {
      g[i] = (partition + 1) * 0.5f + (i % 7);
    }
    return g;
  }

  /** What a correct all-reduce gives, summed on the driver. */
  private static float[] expected() {
    float[] sum = new float[LENGTH];
    for (int p = 0; p < TASKS; p++) {
      float[] g = gradient(p);
      for (int i = 0; i < LENGTH; i++) {
        sum[i] += g[i];
      }
    }
    return sum;
  }

  /**
   * Runs the job in which rank 2 of attempt 0 does {@code fault} before its first call; returns the peers'
   * reports ("waited-ms failed-at-epoch-ms exception") and checks the retried result.
   */
  private static List<String> runWithFault(String fault) throws Exception {
    Path dir = Files.createTempDirectory(scratch, "fail-before-join");
    String reports = dir.toString();
    List<float[]> results = Barrier.mapPartitions(SparkTests.partitions(sc, TASKS), it -> {
      BarrierTaskContext task = BarrierTaskContext.get();
      int rank = task.partitionId();
      float[] g = gradient(rank);
      if (task.stageAttemptNumber() == 0 && rank == 2) {
        Thread.sleep(500); // the peers are waiting for their group by now
        Files.writeString(Paths.get(reports, "fault"), Long.toString(System.currentTimeMillis()));
        if (fault.equals("halt")) {
          Runtime.getRuntime().halt(1);
        }
        throw new IllegalStateException("injected failure of rank 2 before its first call");
      }
      long t0 = System.currentTimeMillis();
      try {
        Communicator comm = Collective.communicator();
        comm.allReduce(g, ReduceOp.SUM);
      } catch (RuntimeException e) {
        long now = System.currentTimeMillis();
        Files.writeString(Paths.get(reports, "rank-" + rank + "-attempt-" + task.stageAttemptNumber()),
            (now - t0) + " " + now + " " + e);
        throw e;
      }
      return Collections.singletonList(g).iterator();
    }).collect();
    assertEquals(TASKS, results.size());
    float[] want = expected();
    for (float[] r : results) {
      assertArrayEquals(want, r, "the retried stage's sum");
    }
    long faultAt = Long.parseLong(Files.readString(dir.resolve("fault")).trim());
    List<String> seen = new java.util.ArrayList<>();
    for (File f : dir.toFile().listFiles((d, n) -> n.startsWith("rank-"))) {
      String report = Files.readString(f.toPath());
      long failedAt = Long.parseLong(report.split(" ")[1]);
      seen.add(f.getName() + ": " + (failedAt - faultAt) + " ms after the fault: " + report);
    }
    Collections.sort(seen);
    System.out.println(fault + " before join: " + seen);
    return seen;
  }

  private static void assertFailedFast(List<String> reports, int survivors) {
    assertEquals(survivors, reports.size(), "every surviving peer of attempt 0 reports its failure: " + reports);
    for (String r : reports) {
      assertTrue(r.contains("-attempt-0"), r);
      long after = Long.parseLong(r.substring(r.indexOf(": ") + 2, r.indexOf(" ms after")));
      assertTrue(after < 2000, "a peer failed " + after + " ms after the fault (bound 2000 ms): " + r);
      assertTrue(r.contains(" io.sparkcollective.core.api."), "fails with the library's exception: " + r);
    }
  }

  @Test
  void shouldFailPeersWithin2SecondsWhenATaskThrowsBeforeItsFirstCall() throws Exception {
    long start = System.nanoTime();
    List<String> reports = runWithFault("throw");
    assertFailedFast(reports, TASKS - 1);
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(ms < 20_000, "failed attempt plus retry took " + ms + " ms");
    // The driver names the failed task: its peers learn which rank and why, not just that they were killed.
    assertTrue(reports.stream().anyMatch(r -> r.contains("injected failure of rank 2") || r.contains("(rank 2)")),
        "a peer names the failed task: " + reports);
  }

  @Test
  void shouldFailPeersWithin2SecondsWhenAnExecutorDiesBeforeItsTaskCalls() throws Exception {
    long start = System.nanoTime();
    List<String> reports = runWithFault("halt");
    // Rank 2 shares its executor with one other rank, which dies with it: the two on the other survive.
    assertTrue(reports.size() >= 2, "the ranks of the surviving executor report their failure: " + reports);
    assertFailedFast(reports, reports.size());
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(ms < 40_000, "losing an executor and retrying took " + ms + " ms");
  }
}
