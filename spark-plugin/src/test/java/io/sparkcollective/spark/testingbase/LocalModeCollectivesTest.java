package io.sparkcollective.spark.testingbase;

import com.holdenkarau.spark.testing.JavaRDDComparisons;
import com.holdenkarau.spark.testing.SharedJavaSparkContext;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.spark.Barrier;
import io.sparkcollective.spark.Collective;
import io.sparkcollective.spark.CollectivePlugin;
import io.sparkcollective.spark.SparkTests;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Local mode (the barrier tasks are threads of the driver's JVM, as in a notebook) on spark-testing-base's
 * shared SparkContext, with the plugin: the collectives' results, per rank, compared as RDDs with what Spark
 * itself computes (treeAggregate, the partitions' own data).
 */
@Timeout(180)
class LocalModeCollectivesTest extends SharedJavaSparkContext {
  private static final int TASKS = 4;
  private static final int LENGTH = 1000;

  @Override
  public SparkConf conf() {
    return new SparkConf().setMaster("local[" + TASKS + "]").setAppName("local-mode-collectives")
        .set("spark.plugins", CollectivePlugin.class.getName())
        .set("spark.ui.enabled", "false");
  }

  @BeforeEach
  void shareTheContext() {
    runBefore();
  }

  @AfterAll
  static void stopTheContext() {
    runAfterClass();
  }

  /** Partition p's gradient of {@code length}: values that sum exactly in float. */
  private static float[] gradient(int p, int length) {
    float[] g = new float[length];
    for (int i = 0; i < length; i++) {
      g[i] = (i % 97) * (p + 1) - 40 * p;
    }
    return g;
  }

  private static float[] gradient(int p) {
    return gradient(p, LENGTH);
  }

  private JavaRDD<Integer> partitions() {
    return SparkTests.partitions(jsc(), TASKS);
  }

  @Test
  void everyRankHoldsWhatTreeAggregateComputes() {
    float[] tree = SparkTests.treeAggregateSum(partitions(), LocalModeCollectivesTest::gradient, LENGTH);
    JavaRDD<String> reduced = Barrier.mapPartitions(partitions(), it -> {
      float[] g = gradient(it.next());
      Collective.communicator().allReduce(g, ReduceOp.SUM);
      return Collections.singletonList("rank " + TaskContext.getPartitionId() + " " + Arrays.toString(g))
          .iterator();
    });
    List<String> expected = new ArrayList<>();
    for (int r = 0; r < TASKS; r++) {
      expected.add("rank " + r + " " + Arrays.toString(tree));
    }
    JavaRDDComparisons.assertRDDEquals(jsc().parallelize(expected), reduced);
  }

  @Test
  void allGatherLaysOutEveryPartitionsDataInRankOrder() {
    JavaRDD<String> gathered = Barrier.mapPartitions(partitions(), it -> {
      int p = it.next();
      float[] mine = Arrays.copyOf(gradient(p), 8);
      float[] all = new float[8 * TASKS];
      Collective.communicator().allGather(mine, all);
      return Collections.singletonList(Arrays.toString(all)).iterator();
    });
    // What the partitions hold, collected by Spark and laid out on the driver.
    List<float[]> parts = partitions().map(p -> Arrays.copyOf(gradient(p), 8)).collect();
    float[] layout = new float[8 * TASKS];
    for (int p = 0; p < TASKS; p++) {
      System.arraycopy(parts.get(p), 0, layout, 8 * p, 8);
    }
    JavaRDDComparisons.assertRDDEquals(jsc().parallelize(Collections.nCopies(TASKS, Arrays.toString(layout))),
        gathered);
  }
}
