package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/** Four executor JVMs with one task slot each: every rank on its own executor, all traffic over TCP. */
@Timeout(300)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SingleTaskExecutorsTest {
  private static final int TASKS = 4;
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() throws Exception {
    sc = new JavaSparkContext(SparkTests.withPlugin("local-cluster[4,1,768]", "single-task-executors")
        .set("spark.executor.memory", "768m"));
    SparkTests.awaitExecutors(sc, TASKS);
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  private static JavaRDD<Integer> partitions() {
    return SparkTests.partitions(sc, TASKS);
  }

  /** Random gradients of multiples of 1/4, so every order of summation gives the same floats. */
  private static float[] gradient(int partition, int length) {
    SplittableRandom rnd = new SplittableRandom(77 + partition);
    float[] g = new float[length];
    for (int i = 0; i < length; i++) {
      g[i] = rnd.nextInt(-1000, 1001) / 4f;
    }
    return g;
  }

  @Test
  @Order(1)
  void aBarrierStageThatNeverAsksForItsCommunicatorKeepsSparksOwnBarrierWorking() {
    // Runs first in this application; the tasks' groups form in the background (group.formAtTaskStart) and are
    // dropped when the tasks end. FormAtTaskStartTest shows that with the setting off nothing connects.
    List<Integer> passed = Barrier.mapPartitionsWithoutRetry(partitions(), it -> {
      org.apache.spark.BarrierTaskContext.get().barrier();
      return Collections.singletonList(1).iterator();
    }).collect();
    assertEquals(List.of(1, 1, 1, 1), passed, "Spark's barrier() on every task");
  }

  @Test
  @Order(2)
  void allReduceGivesTheSameSumAsTreeAggregateWithEveryRankOnItsOwnExecutor() {
    int length = 200_003;
    List<float[]> reduced = Barrier.mapPartitions(partitions(), it -> {
      Communicator comm = Collective.communicator();
      float[] g = gradient(comm.rank(), length);
      comm.allReduce(g, ReduceOp.SUM);
      int connections = CollectiveExecutorPlugin.instance().endpoint().openConnections();
      long shared = CollectiveExecutorPlugin.instance().endpoint().sharedMemoryPayloads();
      return java.util.Arrays.asList(g, new float[] {connections, shared}).iterator();
    }).collect();
    float[] tree = SparkTests.treeAggregateSum(partitions(), SingleTaskExecutorsTest::gradient, length);
    assertEquals(2 * TASKS, reduced.size());
    for (int r = 0; r < TASKS; r++) {
      assertArrayEquals(tree, reduced.get(2 * r), "rank " + r + " vs treeAggregate");
      assertTrue(reduced.get(2 * r + 1)[0] >= 1, "rank " + r + "'s executor connected to its peers");
      // The executors share this host: payloads between them go through shared memory, not the socket.
      assertTrue(reduced.get(2 * r + 1)[1] >= 1, "rank " + r + "'s executor received payloads in shared memory");
    }
  }
}
