package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
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
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() {
    SparkConf conf = new SparkConf().setMaster("local-cluster[2,2,1024]").setAppName("collective-test")
        .set("spark.plugins", CollectivePlugin.class.getName())
        .set("spark.executorEnv.SPARK_SCALA_VERSION", "2.12")
        .set("spark.ui.enabled", "false")
        .set("spark.collective.transport.checksum", "true");
    sc = new JavaSparkContext(conf);
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  private static float[] gradient(int partition, int length) {
    SplittableRandom rnd = new SplittableRandom(1000 + partition);
    float[] g = new float[length];
    for (int i = 0; i < length; i++) {
      g[i] = rnd.nextInt(-100, 101) / 4f;
    }
    return g;
  }

  @Test
  void shouldAllReduceGradientsAcrossExecutorsToTheSameSumAsOnTheDriver() {
    int tasks = 4;
    int length = 100_003;
    List<Integer> parts = new ArrayList<>();
    for (int i = 0; i < tasks; i++) {
      parts.add(i);
    }
    JavaRDD<Integer> rdd = sc.parallelize(parts, tasks);
    List<float[]> results = Barrier.mapPartitions(rdd, it -> {
      Communicator comm = Collective.communicator();
      float[] g = gradient(comm.rank(), length);
      comm.allReduce(g, ReduceOp.SUM);
      return Collections.singletonList(g).iterator();
    }).collect();
    float[] expected = new float[length];
    for (int p = 0; p < tasks; p++) {
      float[] g = gradient(p, length);
      for (int i = 0; i < length; i++) {
        expected[i] += g[i];
      }
    }
    assertEquals(tasks, results.size());
    for (float[] r : results) {
      assertArrayEquals(expected, r);
    }
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
