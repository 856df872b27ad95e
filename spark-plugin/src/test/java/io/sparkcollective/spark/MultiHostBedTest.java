package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.transport.tcp.TcpEndpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Several hosts: a Spark standalone cluster (a Master and one Worker per emulated host) on network
 * namespaces joined by a bridge, each host's link limited to 1 Gbit/s both ways (benchmarks/bed). Needs root;
 * runs when named ({@code -Dtest=MultiHostBedTest}, README "Tests"), not in the default build.
 */
@Timeout(600)
class MultiHostBedTest {
  private static final int HOSTS = 3;
  private static final Path REPO = Paths.get(System.getProperty("spark.test.home", ".")).resolve("..")
      .toAbsolutePath().normalize();
  private static JavaSparkContext sc;

  private static void cluster(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("bash", REPO.resolve("benchmarks/bed/cluster.sh").toString()));
    command.addAll(List.of(args));
    Path log = Files.createTempFile("cluster", ".log");
    Process p = new ProcessBuilder(command).directory(REPO.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    if (!p.waitFor(180, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(command + " did not finish in 180 s:\n" + Files.readString(log));
    }
    assertEquals(0, p.exitValue(), command + " failed:\n" + Files.readString(log));
  }

  @BeforeAll
  static void start() throws Exception {
    // Torn down even if the JVM is stopped before @AfterAll runs.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        cluster("down");
      } catch (Exception e) {
        System.err.println("cluster down failed: " + e);
      }
    }));
    cluster("up", Integer.toString(HOSTS), "1gbit");
    SparkConf conf = SparkTests.withPlugin("spark://198.18.0.1:7077", "multi-host-bed")
        .set("spark.driver.host", "198.18.0.1")
        .set("spark.driver.bindAddress", "198.18.0.1")
        .set("spark.executor.memory", "1g")
        .set("spark.executor.cores", "1")
        .set("spark.cores.max", Integer.toString(HOSTS));
    sc = new JavaSparkContext(conf);
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (sc.sc().getExecutorMemoryStatus().size() < HOSTS + 1 && System.nanoTime() < until) {
      Thread.sleep(100);
    }
    assertEquals(HOSTS + 1, sc.sc().getExecutorMemoryStatus().size(), "an executor per host (and the driver)");
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (sc != null) {
        sc.stop();
      }
    } finally {
      cluster("down");
    }
  }

  private static float[] gradient(int partition, int length) {
    SplittableRandom rnd = new SplittableRandom(7000 + partition);
    float[] g = new float[length];
    for (int i = 0; i < length; i++) {
      g[i] = rnd.nextInt(-100, 101) / 4f;
    }
    return g;
  }

  @Test
  void gradientsAllReducedAcrossHostsEqualTreeAggregateAndNoPayloadTakesSharedMemory() {
    int length = 1_000_003;
    JavaRDD<Integer> rdd = SparkTests.partitions(sc, HOSTS);
    float[] tree = SparkTests.treeAggregateSum(rdd, MultiHostBedTest::gradient, length);
    List<String> results = Barrier.mapPartitions(rdd, it -> {
      float[] g = gradient(it.next(), length);
      Collective.communicator().allReduce(g, ReduceOp.SUM);
      TcpEndpoint e = CollectiveExecutorPlugin.instance().endpoint();
      return Collections.singletonList(e.addressKey().split(":")[0] + " " + e.sharedMemoryPayloads() + " "
          + java.util.Arrays.toString(g)).iterator();
    }).collect();
    Set<String> hosts = new HashSet<>();
    String expected = java.util.Arrays.toString(tree);
    for (int r = 0; r < HOSTS; r++) {
      String[] out = results.get(r).split(" ", 3);
      hosts.add(out[0]);
      assertEquals("0", out[1], "rank " + r + ": no payload between hosts went through shared memory");
      assertEquals(expected, out[2], "rank " + r + " vs treeAggregate");
    }
    assertEquals(Set.of("198.18.0.11", "198.18.0.12", "198.18.0.13"), hosts, "one rank on each host's endpoint");
  }
}
