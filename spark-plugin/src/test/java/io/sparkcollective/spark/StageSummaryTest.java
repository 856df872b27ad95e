package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.ReduceOp;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The driver's summary of a stage attempt's group: what a hand count of the ranks' reports gives, and, on
 * real executors, a rank made late at every operation is named with about its lateness, in the log line and
 * in the driver's metrics.
 */
@Timeout(300)
class StageSummaryTest {
  /** Where the tests' executors leave their reports; removed after the class. */
  @org.junit.jupiter.api.io.TempDir
  static java.nio.file.Path scratch;

  private static Messages.Stats stats(int rank, int size, long... opMicros) {
    return new Messages.Stats("g", 3, 1, rank, size, (rank + 1) * 1_000_000L, opMicros.length, 400L * opMicros.length,
        400L * opMicros.length, 1000L * (rank + 1), opMicros, "h" + rank, new long[0], new long[0]);
  }

  /** Rank {@code rank} of 4 on {@code host}, which received {@code mb[p]} MB from p in {@code ms[p]} ms. */
  private static Messages.Stats linked(int rank, String host, double[] mb, double[] ms) {
    long[] bytes = new long[mb.length];
    long[] nanos = new long[mb.length];
    for (int p = 0; p < mb.length; p++) {
      bytes[p] = Math.round(mb[p] * 1e6);
      nanos[p] = Math.round(ms[p] * 1e6);
    }
    return Messages.Stats.decode(new Messages.Stats("g", 3, 0, rank, mb.length, 1, 1, 4, 4, 10, new long[] {10},
        host, bytes, nanos).encode());
  }

  @Test
  void aHostWhoseLinksAllLagTheOthersIsNamedFromTheRatesTheRanksReport() {
    // Hosts a, a, b, c: rank 1 gets rank 0's payloads through shared memory (not counted), rank 2 gets rank 1's
    // at 1000 MB/s, rank 3 rank 2's at 100 and rank 0 rank 3's at 8 MB / 70 ms; rank 1's 1 KB from rank 2 are too
    // few to judge.
    Messages.Stats[] all = {
        linked(0, "a", new double[] {0, 0, 0, 8}, new double[] {0, 0, 0, 70}),
        linked(1, "a", new double[] {0, 0, 0.001, 0}, new double[] {0, 0, 1000, 0}),
        linked(2, "b", new double[] {0, 8, 0, 0}, new double[] {0, 8, 0, 0}),
        linked(3, "c", new double[] {0, 0, 8, 0}, new double[] {0, 0, 80, 0})};
    StageSummaries.Links links = StageSummaries.links(all);
    assertEquals(3, links.judged);
    assertEquals(100, links.slowestMBps, 1e-9);
    assertEquals(1000, links.fastestMBps, 1e-9);
    assertEquals("rank 2 (b) -> rank 3 (c)", links.slowest);
    assertEquals("c", links.slowHost);
    assertEquals(3, links.slowHostRank);
    assertEquals(8 / 0.070, links.slowHostMBps, 1e-9, "the faster of c's links");
    assertEquals(1000, links.elsewhereMBps, 1e-9);
    assertTrue(StageSummaries.summarise(all).toString().contains("host c (rank 3) is slow: its links at most 114.3 "
        + "MB/s, the others at least 1000.0 MB/s"), StageSummaries.summarise(all).toString());

    // Link b -> c as fast as a -> b: c's links no longer all lag, nobody is named.
    all[3] = linked(3, "c", new double[] {0, 0, 8, 0}, new double[] {0, 0, 9, 0});
    assertNull(StageSummaries.links(all).slowHost, StageSummaries.links(all).toString());
    // Two hosts: a slow link touches both, so neither can be told apart.
    Messages.Stats[] two = {
        linked(0, "a", new double[] {0, 8}, new double[] {0, 80}),
        linked(1, "b", new double[] {8, 0}, new double[] {8, 0})};
    assertNull(StageSummaries.links(two).slowHost, StageSummaries.links(two).toString());
    assertEquals(StageSummaries.Links.NONE, StageSummaries.links(new Messages.Stats[] {stats(0, 2, 1),
        stats(1, 2, 1)}), "ranks without network links");
  }

  @Test
  void aHandCountOfTheReports() {
    StageSummaries summaries = new StageSummaries();
    // Op 0: rank 1 took least (came last), 90 us after the first; op 1: rank 1 again, 50 us; op 2: rank 0, 30 us;
    // op 3: rank 1, 70 us.
    assertNull(summaries.add(stats(0, 3, 100, 60, 10, 80)));
    assertNull(summaries.add(stats(2, 3, 100, 60, 40, 80)));
    StageSummaries.Summary s = summaries.add(stats(1, 3, 10, 10, 40, 10));
    assertNotNull(s, "the last report completes the group");
    assertEquals(3, s.ranks);
    assertEquals(3.0, s.formedMs, "the slowest rank's formation");
    assertEquals(4, s.operations);
    assertEquals(1600, s.bytes);
    assertEquals(1, s.lastRank);
    assertEquals(3, s.lastRankTimes);
    assertEquals(4, s.comparedOperations);
    assertEquals(0.07, s.lastRankLateMs, 1e-9, "median of 90, 50 and 70 us");
    // busbw per rank 2(N-1)/N * 1600 B / (1000 (r+1) ns): 2.133, 1.067, 0.711 GB/s; the median is rank 1's.
    assertEquals(4.0 / 3 * 1600 / 2000, s.busbwGBps, 1e-9);
    assertTrue(s.toString().contains("rank 1 arrived last at 3 of 4 operations, a median 0.1 ms after the first"),
        s.toString());
    assertEquals(s, summaries.last());
  }

  @Test
  void aRankLateAtEveryOperationIsNamedWithItsLateness() throws Exception {
    java.nio.file.Path csv = java.nio.file.Files.createTempDirectory(scratch, "collective-metrics");
    JavaSparkContext sc = new JavaSparkContext(SparkTests.withPlugin("local-cluster[2,2,1024]", "stage-summary")
        .set("spark.metrics.conf.driver.sink.csv.class", "org.apache.spark.metrics.sink.CsvSink")
        .set("spark.metrics.conf.driver.sink.csv.period", "1")
        .set("spark.metrics.conf.driver.sink.csv.directory", csv.toString()));
    try {
      int ops = 12;
      int length = 1 << 16;
      Barrier.mapPartitions(SparkTests.partitions(sc, 4), it -> {
        int p = it.next();
        float[] g = new float[length];
        for (int i = 0; i < ops; i++) {
          if (p == 2) {
            Thread.sleep(80);
          }
          java.util.Arrays.fill(g, p);
          Collective.communicator().allReduce(g, ReduceOp.SUM);
        }
        return Collections.singletonList(g[0]).iterator();
      }).collect();
      CollectiveDriverPlugin driver = CollectiveDriverPlugin.instance();
      assertNotNull(driver, "the driver plugin runs in this JVM");
      long until = System.nanoTime() + 20_000_000_000L;
      while (driver.lastSummary() == null && System.nanoTime() < until) {
        Thread.sleep(20);
      }
      StageSummaries.Summary s = driver.lastSummary();
      assertNotNull(s, "every rank reported within 20 s");
      assertEquals(4, s.ranks);
      assertEquals(ops, s.operations);
      assertEquals((long) ops * length * Float.BYTES, s.bytes);
      assertEquals(2, s.lastRank, s.toString());
      assertTrue(s.lastRankTimes >= ops - 2, s.toString());
      assertTrue(s.lastRankLateMs > 50 && s.lastRankLateMs < 2000, s.toString());
      assertTrue(s.busbwGBps > 0, s.toString());
      // The same figures in the driver's metrics, where Spark's sinks read them.
      Object gauge = SparkEnv.get().metricsSystem().getSourcesByName(
          "plugin." + CollectivePlugin.class.getName()).head().metricRegistry().getGauges()
          .get("lastStage.lastRank").getValue();
      assertEquals(2, ((Number) gauge).intValue());
    } finally {
      sc.stop();
    }
    // Spark's CSV sink reports once more as the context stops: the README's way of seeing the summary.
    try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.list(csv)) {
      java.nio.file.Path lastRank = files.filter(f -> f.getFileName().toString().endsWith(
          "plugin." + CollectivePlugin.class.getName() + ".lastStage.lastRank.csv")).findFirst()
          .orElseThrow(() -> new AssertionError("no lastStage.lastRank file in " + csv));
      List<String> lines = java.nio.file.Files.readAllLines(lastRank);
      assertTrue(lines.get(lines.size() - 1).endsWith(",2"), lines.toString());
    }
  }

  @Test
  void reportsOfBrokenShapeAreIgnored() {
    StageSummaries summaries = new StageSummaries();
    assertNull(summaries.add(stats(5, 3, 1)), "rank out of range");
    assertNull(summaries.add(stats(0, 0, 1)), "no ranks");
    assertNull(summaries.last());
  }
}
