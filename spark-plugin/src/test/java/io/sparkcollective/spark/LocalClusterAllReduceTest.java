package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Real executor JVMs (local-cluster, 2 executors x 2 cores): barrier tasks all-reduce through the plugin. */
@Timeout(300)
class LocalClusterAllReduceTest {
  /** Where the tests' executors leave their reports; removed after the class. */
  @org.junit.jupiter.api.io.TempDir
  static java.nio.file.Path scratch;

  private static JavaSparkContext sc;

  @BeforeAll
  static void start() {
    SparkConf conf = SparkTests.withPlugin("local-cluster[2,2,1024]", "collective-test")
        .set("spark.collective.transport.checksum", "true");
    sc = new JavaSparkContext(conf);
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  /** The sum of every partition's gradient, computed on the driver: what the all-reduce must give. */
  private static float[] expectedSum(int tasks, int length) {
    return SparkTests.seededSum(1000, tasks, length);
  }

  /** All-reduces {@code g}; if it fails, leaves how long the failure took and what it said in {@code dir}. */
  private static void allReduceReportingFailure(Communicator comm, float[] g, String dir) throws Exception {
    long t0 = System.nanoTime();
    try {
      comm.allReduce(g, ReduceOp.SUM);
    } catch (RuntimeException e) {
      // Executors share this machine, so a file is how a failed task's observation reaches the test.
      long waitedMs = (System.nanoTime() - t0) / 1_000_000;
      java.nio.file.Files.writeString(java.nio.file.Paths.get(dir, "rank-" + comm.rank()), waitedMs + " " + e);
      throw e;
    }
  }

  private static float[] gradient(int partition, int length) {
    return SparkTests.seededGradient(1000, partition, length);
  }

  @Test
  void shouldAllReduceGradientsAcrossExecutorsToTheSameSumAsTreeAggregate() {
    int tasks = 4;
    int length = 100_003;
    JavaRDD<Integer> rdd = SparkTests.partitions(sc, tasks);
    List<float[]> results = Barrier.mapPartitions(rdd, it -> {
      Communicator comm = Collective.communicator();
      float[] g = gradient(comm.rank(), length);
      comm.allReduce(g, ReduceOp.SUM);
      // The rank at the end of the sum shows that partition i of the result is what task i returned.
      return java.util.Arrays.asList(g, new float[] {comm.rank()}).iterator();
    }).collect();
    float[] expected = expectedSum(tasks, length);
    // What Spark users do today, over the same data: the sums are exact, so the bits must agree.
    float[] tree = SparkTests.treeAggregateSum(rdd, LocalClusterAllReduceTest::gradient, length);
    assertArrayEquals(expected, tree, "treeAggregate vs the driver's sum");
    assertEquals(2 * tasks, results.size());
    for (int rank = 0; rank < tasks; rank++) {
      assertArrayEquals(tree, results.get(2 * rank), "rank " + rank + " vs treeAggregate");
      assertArrayEquals(new float[] {rank}, results.get(2 * rank + 1));
    }
  }

  @Test
  void shouldFailPeersFastWhenATaskThrowsAndSucceedOnTheStageRetry() throws Exception {
    int tasks = 4;
    int length = 50_000;
    String reports = java.nio.file.Files.createTempDirectory(scratch, "collective-failures").toString();
    long start = System.nanoTime();
    // Barrier.mapPartitions ends the stage with a shuffle, so Spark retries it as a whole.
    List<float[]> results = Barrier.mapPartitions(SparkTests.partitions(sc, tasks), it -> {
      Communicator comm = Collective.communicator();
      float[] g = gradient(comm.rank(), length);
      if (comm.rank() == 1 && org.apache.spark.BarrierTaskContext.get().stageAttemptNumber() == 0) {
        Thread.sleep(300); // the peers are waiting in their all-reduce by now
        throw new IllegalStateException("injected failure on rank 1, attempt 0");
      }
      allReduceReportingFailure(comm, g, reports);
      return Collections.singletonList(g).iterator();
    }).collect();
    float[] expected = expectedSum(tasks, length);
    assertEquals(tasks, results.size());
    for (float[] r : results) {
      assertArrayEquals(expected, r);
    }
    long seconds = (System.nanoTime() - start) / 1_000_000_000L;
    assertTrue(seconds < 60, "the failed attempt and the retry took " + seconds + " s");
    java.io.File[] surfaced = new java.io.File(reports).listFiles();
    assertEquals(3, surfaced.length, "the three peers of the failed rank report their failure");
    for (java.io.File f : surfaced) {
      String report = java.nio.file.Files.readString(f.toPath());
      long waitedMs = Long.parseLong(report.substring(0, report.indexOf(' ')));
      assertTrue(waitedMs < 5000, f.getName() + " waited " + report);
      assertTrue(report.contains("rank 1"), f.getName() + " names the failed rank: " + report);
    }
  }

  @Test
  void shouldFailSurvivorsFastWhenAnExecutorDiesAndSucceedOnTheStageRetry() throws Exception {
    int tasks = 4;
    int length = 200_000;
    String reports = java.nio.file.Files.createTempDirectory(scratch, "collective-executor-loss").toString();
    long start = System.nanoTime();
    List<float[]> results = Barrier.mapPartitions(SparkTests.partitions(sc, tasks), it -> {
      Communicator comm = Collective.communicator();
      float[] g = gradient(comm.rank(), length);
      if (comm.rank() == 0 && org.apache.spark.BarrierTaskContext.get().stageAttemptNumber() == 0) {
        Thread.sleep(300);
        Runtime.getRuntime().halt(1); // the whole executor JVM goes, with every rank on it
      }
      allReduceReportingFailure(comm, g, reports);
      return Collections.singletonList(g).iterator();
    }).collect();
    float[] expected = expectedSum(tasks, length);
    for (float[] r : results) {
      assertArrayEquals(expected, r);
    }
    long seconds = (System.nanoTime() - start) / 1_000_000_000L;
    assertTrue(seconds < 90, "losing an executor and retrying took " + seconds + " s");
    java.io.File[] surfaced = new java.io.File(reports).listFiles();
    assertTrue(surfaced.length >= 1, "the ranks on the surviving executor report their failure");
    for (java.io.File f : surfaced) {
      String report = java.nio.file.Files.readString(f.toPath());
      long waitedMs = Long.parseLong(report.substring(0, report.indexOf(' ')));
      assertTrue(waitedMs < 5000, f.getName() + " waited " + report);
    }
  }

  /**
   * This library's threads, the open file descriptors and the direct memory (NIO and Netty) of the executor
   * this task runs in. (Spark's own thread count is no measure: its block manager keeps up to 100 idle
   * cleanup threads for a minute.)
   */
  private static long[] executorResources() throws java.io.IOException {
    long threads = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("collective-"))
        .count();
    long fds;
    try (java.util.stream.Stream<java.nio.file.Path> s = java.nio.file.Files.list(java.nio.file.Paths.get(
        "/proc/self/fd"))) {
      fds = s.count();
    }
    long direct = 0;
    for (java.lang.management.BufferPoolMXBean b
        : java.lang.management.ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)) {
      if (b.getName().equals("direct")) {
        direct += b.getMemoryUsed();
      }
    }
    direct += io.netty.util.internal.PlatformDependent.usedDirectMemory();
    return new long[] {threads, fds, direct};
  }

  @Test
  void shouldNotGrowExecutorThreadsFilesOrDirectMemoryOverAHundredStages() {
    int tasks = 4;
    List<Integer> parts = List.of(0, 1, 2, 3);
    long[][] perStage = new long[100][];
    for (int stage = 0; stage < 100; stage++) {
      List<long[]> seen = Barrier.mapPartitions(SparkTests.partitions(sc, tasks), it -> {
        Communicator comm = Collective.communicator();
        float[] g = new float[300_000];
        java.util.Arrays.fill(g, 1f);
        comm.allReduce(g, ReduceOp.SUM);
        comm.allReduce(g, ReduceOp.MAX);
        if (g[0] != tasks) {
          throw new AssertionError("wrong sum " + g[0]);
        }
        return Collections.singletonList(executorResources()).iterator();
      }).collect();
      long[] max = new long[3];
      for (long[] r : seen) {
        for (int i = 0; i < 3; i++) {
          max[i] = Math.max(max[i], r[i]);
        }
      }
      perStage[stage] = max;
    }
    long[] warm = perStage[10];
    long[] last = perStage[99];
    String trace = "stage 10: " + java.util.Arrays.toString(warm) + ", stage 99: " + java.util.Arrays.toString(last);
    assertTrue(last[0] <= warm[0], "the library's executor threads grew: " + trace);
    assertTrue(last[1] <= warm[1] + 4, "executor file descriptors grew: " + trace);
    assertTrue(last[2] <= warm[2] + (16 << 20), "executor direct memory grew: " + trace);
    System.out.println("executor resources (threads, fds, direct bytes), " + trace);
  }

  /** A user type without a no-argument constructor, as Spark's serializer ships it. */
  static final class Shard implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final int rank;
    final String host;

    Shard(int rank, String host) {
      this.rank = rank;
      this.host = host;
    }
  }

  @Test
  void shouldGatherUserObjectsWithSparksSerializer() {
    List<String> seen = Barrier.mapPartitions(sc.parallelize(List.of(0, 1, 2, 3), 4), it -> {
      Communicator comm = Collective.communicator();
      List<Shard> all = comm.allGatherObjects(new Shard(comm.rank(), "host-" + comm.rank()));
      StringBuilder sb = new StringBuilder();
      for (Shard s : all) {
        sb.append(s.rank).append(':').append(s.host).append(' ');
      }
      return Collections.singletonList(sb.toString().trim()).iterator();
    }).collect();
    for (String s : seen) {
      assertEquals("0:host-0 1:host-1 2:host-2 3:host-3", s);
    }
  }

  @Test
  void shouldAllReduceSparkMlDenseVectorsInPlaceAndRefuseSparseOnes() {
    List<String> seen = Barrier.mapPartitions(sc.parallelize(List.of(0, 1, 2, 3), 4), it -> {
      Communicator comm = Collective.communicator();
      double[] values = {comm.rank(), 1.5, -comm.rank() * 0.25};
      org.apache.spark.ml.linalg.DenseVector v = new org.apache.spark.ml.linalg.DenseVector(values);
      org.apache.spark.ml.linalg.DenseVector sum = MlVectors.allReduce(comm, v, ReduceOp.SUM);
      String error;
      try {
        MlVectors.allReduce(comm, v.toSparse(), ReduceOp.SUM);
        error = "no error";
      } catch (io.sparkcollective.core.api.CollectiveUsageException e) {
        error = e.getMessage();
      }
      return Collections.singletonList((sum == v && sum.values() == values) + " " + sum + " | " + error).iterator();
    }).collect();
    assertEquals(4, seen.size());
    for (String s : seen) {
      // 0+1+2+3 = 6, 4 x 1.5 = 6, -(0+1+2+3)/4 = -1.5; the sparse vector is refused locally (no group failure).
      assertTrue(s.startsWith("true [6.0,6.0,-1.5] | rank "), s);
      assertTrue(s.contains("needs a DenseVector"), s);
    }
  }

  @Test
  void shouldDropAFrameOfAGroupThatIsGoneAtTheExecutorsEndpoint() {
    // Two ranks form a side group on their executors' endpoints; rank 1 leaves it; a frame rank 0 then sends
    // for that group (what a zombie task of an earlier stage attempt would send) is dropped and counted.
    List<String> seen = Barrier.mapPartitions(sc.parallelize(List.of(0, 1), 2), it -> {
      Communicator comm = Collective.communicator();
      CollectiveExecutorPlugin plugin = CollectiveExecutorPlugin.instance();
      io.sparkcollective.core.transport.tcp.TcpEndpoint endpoint = plugin.endpoint();
      List<String> keys = comm.allGatherObjects(endpoint.addressKey());
      Communicator probe = io.sparkcollective.core.engine.TcpGroup.join(endpoint,
          org.apache.spark.TaskContext.get().stageId() + "/stale-probe", comm.rank(),
          io.sparkcollective.core.launch.PeerList.parse(String.join(",", keys)), plugin.config());
      long before = endpoint.rejectedFrames();
      if (comm.rank() == 1) {
        probe.close();
      }
      comm.barrier();
      if (comm.rank() == 0) {
        io.sparkcollective.core.transport.Transport t =
            ((io.sparkcollective.core.engine.EngineCommunicator) probe).transport();
        io.sparkcollective.core.transport.Frame f = t.acquire(16);
        f.payload().size(16);
        f.header(1, 0, 99, 0, 0, io.sparkcollective.core.api.DType.F32.wireCode(), ReduceOp.SUM.wireCode(), -1, 0,
            4, 0);
        t.send(1, f);
      }
      comm.barrier();
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (comm.rank() == 1 && endpoint.rejectedFrames() == before && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      long dropped = endpoint.rejectedFrames() - before;
      if (comm.rank() == 0) {
        probe.close();
      }
      return Collections.singletonList(comm.rank() + ":" + dropped).iterator();
    }).collect();
    assertEquals(List.of("0:0", "1:1"), seen, "rank 1's executor dropped exactly the stale frame");
  }

  @Test
  void shouldTellANonBarrierTaskWhatToDo() {
    SparkException e = assertThrows(SparkException.class, () -> sc.parallelize(List.of(1, 2), 2).map(x -> {
      Collective.communicator();
      return x;
    }).collect());
    assertTrue(String.valueOf(e.getMessage()).contains("needs a barrier stage"), e.getMessage());
  }
}
