package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.transport.tcp.TcpEndpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * Several hosts: a Spark standalone cluster (a Master and one Worker per emulated host) on network
 * namespaces joined by a bridge, each host's link limited to 1 Gbit/s both ways (benchmarks/bed). Host 1's
 * Worker has two cores, so two executors share that host (and its shared memory); hosts 2 and 3 have one
 * each. Needs root; runs when named ({@code -Dtest='*BedTest'}, README "Tests"), not in the default build.
 */
@Timeout(900)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MultiHostBedTest {
  /** Where the tests' executors leave their reports; removed after the class. */
  @org.junit.jupiter.api.io.TempDir
  static Path scratch;

  private static final int HOSTS = 3;
  private static final int EXECUTORS = 4;
  private static final String[] ADDRESSES = {"198.18.0.11", "198.18.0.12", "198.18.0.13"};
  /** The host faults are injected on: one executor, so its rank is the only one lost. */
  private static final int VICTIM_HOST = 3;
  private static final long HEARTBEAT_TIMEOUT_MS = 3000;
  private static final long LOST_BOUND_MS = 2000;
  private static final long SILENT_BOUND_MS = HEARTBEAT_TIMEOUT_MS + 1000;
  private static final Path REPO = Paths.get(System.getProperty("spark.test.home", ".")).resolve("..")
      .toAbsolutePath().normalize();
  private static JavaSparkContext sc;

  private static String run(String what, String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("bash", REPO.resolve("benchmarks/bed/" + what).toString()));
    command.addAll(List.of(args));
    Path log = Files.createTempFile("bed", ".log");
    try {
      Process p = new ProcessBuilder(command).directory(REPO.toFile()).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start();
      if (!p.waitFor(180, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError(command + " did not finish in 180 s:\n" + Files.readString(log));
      }
      assertEquals(0, p.exitValue(), command + " failed:\n" + Files.readString(log));
      return Files.readString(log);
    } finally {
      Files.deleteIfExists(log);
    }
  }

  @BeforeAll
  static void start() throws Exception {
    // Torn down even if the JVM is stopped before @AfterAll runs.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        run("cluster.sh", "down");
      } catch (Exception e) {
        System.err.println("cluster down failed: " + e);
      }
    }));
    run("cluster.sh", "up", Integer.toString(HOSTS), "1gbit", "0", "2,1,1");
    SparkConf conf = SparkTests.withPlugin("spark://198.18.0.1:7077", "multi-host-bed")
        .set("spark.driver.host", "198.18.0.1")
        .set("spark.driver.bindAddress", "198.18.0.1")
        .set("spark.executor.memory", "900m")
        .set("spark.executor.cores", "1")
        .set("spark.cores.max", Integer.toString(EXECUTORS))
        .set("spark.collective.transport.heartbeatIntervalMs", "500")
        .set("spark.collective.transport.heartbeatTimeoutMs", Long.toString(HEARTBEAT_TIMEOUT_MS));
    sc = new JavaSparkContext(conf);
  }

  /** Every test starts with all four executors (a fault test's victim is replaced by its Worker). */
  @BeforeEach
  void allExecutors() throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (sc.sc().getExecutorMemoryStatus().size() < EXECUTORS + 1 && System.nanoTime() < until) {
      Thread.sleep(100);
    }
    assertEquals(EXECUTORS + 1, sc.sc().getExecutorMemoryStatus().size(), "four executors (and the driver)");
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (sc != null) {
        sc.stop();
      }
    } finally {
      run("cluster.sh", "down");
    }
  }

  private static float[] gradient(int partition, int length) {
    return SparkTests.seededGradient(7000, partition, length);
  }

  private static String host() {
    return CollectiveExecutorPlugin.instance().endpoint().addressKey().split(":")[0];
  }

  @Test
  @Order(1)
  void gradientsAllReducedAcrossHostsEqualTreeAggregateAndOnlyExecutorsOfOneHostShareMemory() {
    int length = 1_000_003;
    JavaRDD<Integer> rdd = SparkTests.partitions(sc, EXECUTORS);
    float[] tree = SparkTests.treeAggregateSum(rdd, MultiHostBedTest::gradient, length);
    List<String> results = Barrier.mapPartitions(rdd, it -> {
      int p = it.next();
      float[] g = gradient(p, length);
      Communicator comm = Collective.communicator();
      comm.allReduce(g, ReduceOp.SUM);
      // DIRECT as well: every rank sends to every other, so the two executors of host 1 exchange payloads
      // whichever ranks they hold (AUTO's halving-doubling or ring may never pair them).
      float[] d = gradient(p, length);
      comm.allReduce(DataBuffer.of(d), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.DIRECT));
      if (!Arrays.equals(g, d)) {
        throw new IllegalStateException("rank " + p + ": DIRECT and AUTO sums differ");
      }
      TcpEndpoint e = CollectiveExecutorPlugin.instance().endpoint();
      return Collections.singletonList(host() + " " + e.sharedMemoryPayloads() + " " + Arrays.toString(g))
          .iterator();
    }).collect();
    Map<String, Integer> ranksPerHost = new HashMap<>();
    String expected = Arrays.toString(tree);
    for (int r = 0; r < EXECUTORS; r++) {
      String[] out = results.get(r).split(" ", 3);
      ranksPerHost.merge(out[0], 1, Integer::sum);
      assertEquals(expected, out[2], "rank " + r + " vs treeAggregate");
      long shared = Long.parseLong(out[1]);
      if (out[0].equals(ADDRESSES[0])) {
        assertTrue(shared > 0, "rank " + r + " shares host 1 with another executor: payloads through shared memory");
      } else {
        assertEquals(0, shared, "rank " + r + " is alone on " + out[0] + ": no payload through shared memory");
      }
    }
    assertEquals(Map.of(ADDRESSES[0], 2, ADDRESSES[1], 1, ADDRESSES[2], 1), ranksPerHost, "ranks per host");
  }

  // ------------------------------------------------------------------------------------------- faults

  private enum Fault { KILL, FREEZE, PARTITION }

  private static final int LENGTH = 1 << 22;
  /** All-reduces of the faulted attempt: more than it gets through before the fault (each takes 0.2 s+). */
  private static final int FAULTED_STEPS = 60;

  /**
   * A stage of 4 ranks all-reducing 16 MiB again and again; in its first attempt the executor on host 3 gets
   * {@code fault} once every rank is past its second all-reduce. Returns what the stage (retried by Spark)
   * gave, after checking that every other rank left its call within {@code boundMs} naming host 3.
   */
  private static float[] faulted(Fault fault, long boundMs) throws Exception {
    Path dir = Files.createTempDirectory(scratch, "bed-fault");
    String d = dir.toString();
    Thread injector = new Thread(() -> inject(fault, dir), "bed-injector");
    injector.setDaemon(true);
    injector.start();
    try {
      List<float[]> out = Barrier.mapPartitions(SparkTests.partitions(sc, EXECUTORS), it -> {
        BarrierTaskContext task = BarrierTaskContext.get();
        int rank = task.partitionId();
        boolean record = task.stageAttemptNumber() == 0;
        float[] g0 = gradient(rank, LENGTH);
        float[] g = new float[LENGTH];
        try {
          Communicator comm = Collective.communicator();
          if (record) {
            SparkTests.writeMarker(d, "start-" + rank, host() + " " + ProcessHandle.current().pid());
          }
          for (int s = 0; s < (record ? FAULTED_STEPS : 2); s++) {
            System.arraycopy(g0, 0, g, 0, LENGTH);
            if (record && s == 2) {
              SparkTests.writeMarker(d, "running-" + rank, "");
            }
            comm.allReduce(g, ReduceOp.SUM);
          }
          if (record) {
            SparkTests.writeMarker(d, "done-" + rank, Long.toString(System.currentTimeMillis()));
          }
          return Collections.singletonList(g).iterator();
        } catch (Throwable t) {
          if (record) {
            SparkTests.writeMarker(d, "failed-" + rank, System.currentTimeMillis() + " " + t);
          }
          throw t;
        }
      }).collect();
      injector.join(60_000);
      judge(fault, dir, boundMs);
      for (float[] g : out) {
        assertArrayEquals(out.get(0), g, "every rank of the retried stage holds the same sum");
      }
      return out.get(0);
    } finally {
      injector.interrupt();
      run("netbed.sh", "link", Integer.toString(VICTIM_HOST), "up");
      try (Stream<Path> files = Files.list(dir)) {
        for (Path p : (Iterable<Path>) files::iterator) {
          Files.deleteIfExists(p);
        }
      }
      Files.deleteIfExists(dir);
    }
  }

  private static Map<Integer, String[]> starts(Path dir) throws IOException {
    Map<Integer, String[]> m = new HashMap<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        String n = p.getFileName().toString();
        if (n.startsWith("start-") && !n.endsWith(".tmp")) {
          m.put(Integer.parseInt(n.substring(6)), Files.readString(p).split(" "));
        }
      }
    }
    return m;
  }

  private static boolean survivorsFailed(Path dir, int victim) {
    for (int r = 0; r < EXECUTORS; r++) {
      if (r != victim && !Files.exists(dir.resolve("failed-" + r)) && !Files.exists(dir.resolve("done-" + r))) {
        return false;
      }
    }
    return true;
  }

  /** The fault, once every rank is running; records when it struck and, for silent ones, ends it later. */
  private static void inject(Fault fault, Path dir) {
    try {
      long until = System.currentTimeMillis() + 120_000;
      Map<Integer, String[]> starts = starts(dir);
      while (System.currentTimeMillis() < until) {
        starts = starts(dir);
        boolean running = starts.size() == EXECUTORS;
        for (int r = 0; r < EXECUTORS && running; r++) {
          running = Files.exists(dir.resolve("running-" + r));
        }
        if (running) {
          break;
        }
        Thread.sleep(5);
      }
      int victim = -1;
      for (Map.Entry<Integer, String[]> e : starts.entrySet()) {
        if (e.getValue()[0].equals(ADDRESSES[VICTIM_HOST - 1])) {
          victim = e.getKey();
        }
      }
      long pid = Long.parseLong(starts.get(victim)[1]);
      Thread.sleep(50); // into an all-reduce: each takes 200 ms or more
      SparkTests.writeMarker(dir.toString(), "victim", victim + " " + System.currentTimeMillis());
      switch (fault) {
        case KILL:
          signal("KILL", pid);
          return;
        case FREEZE:
          signal("STOP", pid);
          break;
        case PARTITION:
          run("netbed.sh", "link", Integer.toString(VICTIM_HOST), "down");
          break;
        default:
          throw new IllegalStateException(fault.toString());
      }
      // Ended once the survivors have failed (or well past the bound), so that Spark can retry the stage.
      long end = System.currentTimeMillis() + SILENT_BOUND_MS + 5000;
      while (System.currentTimeMillis() < end && !survivorsFailed(dir, victim)) {
        Thread.sleep(10);
      }
      if (fault == Fault.FREEZE) {
        signal("CONT", pid);
      } else {
        run("netbed.sh", "link", Integer.toString(VICTIM_HOST), "up");
      }
    } catch (Exception e) {
      throw new IllegalStateException("injecting " + fault + " failed", e);
    }
  }

  private static void signal(String sig, long pid) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
    if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("kill -" + sig + " " + pid + " failed");
    }
  }

  /** Every rank but the victim left its call within the bound, with the library's error naming host 3. */
  private static void judge(Fault fault, Path dir, long boundMs) throws IOException {
    assertTrue(Files.exists(dir.resolve("victim")), fault + " never struck");
    String[] v = Files.readString(dir.resolve("victim")).split(" ");
    int victim = Integer.parseInt(v[0]);
    long struck = Long.parseLong(v[1]);
    String victimHost = ADDRESSES[VICTIM_HOST - 1];
    for (int r = 0; r < EXECUTORS; r++) {
      if (r == victim) {
        continue;
      }
      Path failed = dir.resolve("failed-" + r);
      assertTrue(Files.exists(failed), fault + ": rank " + r + " never left its call (or finished all of them)");
      String report = Files.readString(failed);
      long ms = Long.parseLong(report.substring(0, report.indexOf(' '))) - struck;
      System.out.println(fault + ": rank " + r + " left its call " + ms + " ms after the fault: " + report);
      assertTrue(ms <= boundMs, fault + ": rank " + r + " left its call " + ms + " ms after the fault (bound "
          + boundMs + "): " + report);
      assertTrue(report.contains("io.sparkcollective.core.api."), fault + ": rank " + r
          + " failed with the library's exception: " + report);
      assertTrue(report.contains(victimHost), fault + ": rank " + r + "'s error names host " + victimHost + ": "
          + report);
    }
  }

  private static float[] expected() {
    return SparkTests.seededSum(7000, EXECUTORS, LENGTH);
  }

  @Test
  @Order(2)
  void anExecutorKilledMidOperationFailsItsPeersWithinTwoSecondsAndTheRetryIsRight() throws Exception {
    assertArrayEquals(expected(), faulted(Fault.KILL, LOST_BOUND_MS), "the retried stage's sum");
  }

  @Test
  @Order(3)
  void aFrozenExecutorFailsItsPeersWithinTheHeartbeatTimeoutAndTheRetryIsRight() throws Exception {
    assertArrayEquals(expected(), faulted(Fault.FREEZE, SILENT_BOUND_MS), "the retried stage's sum");
  }

  /**
   * A partition: host 3's link goes down mid-operation (packets vanish, nothing resets the connections).
   * Its peers fail on missing heartbeats; Spark cannot retry the barrier stage until the cut-off task's slot
   * is free, which happens once the link is back (the task failed on its own heartbeat timeout and says so)
   * or when the driver declares the executor lost after {@code spark.network.timeout}. Here the link comes
   * back once the peers failed, and the retry is right.
   */
  @Test
  @Order(4)
  void aHostCutOffMidOperationFailsItsPeersWithinTheHeartbeatTimeoutAndTheRetryIsRight() throws Exception {
    assertArrayEquals(expected(), faulted(Fault.PARTITION, SILENT_BOUND_MS), "the retried stage's sum");
  }

  /**
   * Host 3's link at a tenth of the others' (100 Mbit/s both ways): everyone waits for it, yet nobody arrives
   * late at an operation. The result is right, and the driver's stage summary names host 3 and its rank
   * from the rates the ranks' links delivered at.
   */
  @Test
  @Order(5)
  void aSlowHostGivesTheRightSumAndTheDriversSummaryNamesIt() throws Exception {
    int length = 1 << 20;
    JavaRDD<Integer> rdd = SparkTests.partitions(sc, EXECUTORS);
    float[] tree = SparkTests.treeAggregateSum(rdd, MultiHostBedTest::gradient, length);
    CollectiveDriverPlugin driver = CollectiveDriverPlugin.instance();
    StageSummaries.Summary before = driver.lastSummary();
    run("netbed.sh", "rate", Integer.toString(VICTIM_HOST), "100mbit");
    List<String> results;
    try {
      results = Barrier.mapPartitions(rdd, it -> {
        float[] g = gradient(it.next(), length);
        float[] sum = g.clone();
        for (int i = 0; i < 3; i++) {
          System.arraycopy(g, 0, sum, 0, length);
          Collective.communicator().allReduce(sum, ReduceOp.SUM);
        }
        return Collections.singletonList(host() + " " + Arrays.toString(sum)).iterator();
      }).collect();
    } finally {
      run("netbed.sh", "rate", Integer.toString(VICTIM_HOST), "1gbit");
    }
    int slowRank = -1;
    for (int r = 0; r < EXECUTORS; r++) {
      String[] out = results.get(r).split(" ", 2);
      assertEquals(Arrays.toString(tree), out[1], "rank " + r + " vs treeAggregate");
      slowRank = out[0].equals(ADDRESSES[VICTIM_HOST - 1]) ? r : slowRank;
    }
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (driver.lastSummary() == before && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    StageSummaries.Summary s = driver.lastSummary();
    assertTrue(s != before, "every rank reported within 20 s");
    System.out.println("slow host: " + s);
    assertEquals(ADDRESSES[VICTIM_HOST - 1], s.links.slowHost, s.toString());
    assertEquals(slowRank, s.links.slowHostRank, s.toString());
    assertTrue(s.links.slowHostMBps < 0.3 * s.links.elsewhereMBps, s.toString());
  }
}
