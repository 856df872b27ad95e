package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveUsageException;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Calls made where no communicator can exist say exactly what to add. */
@Timeout(120)
class WithoutPluginTest {
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() {
    // No spark.plugins: the application forgot the plugin.
    sc = new JavaSparkContext(new SparkConf().setMaster("local[2]").setAppName("without-plugin")
        .set("spark.ui.enabled", "false"));
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  @Test
  void outsideATaskTheErrorSaysWhereToCallIt() {
    CollectiveUsageException e = assertThrows(CollectiveUsageException.class, Collective::communicator);
    assertTrue(e.getMessage().contains("outside a Spark task") && e.getMessage().contains("barrier()"),
        e.getMessage());
  }

  @Test
  void withoutThePluginTheErrorSaysWhatToAdd() {
    SparkException e = assertThrows(SparkException.class, () -> Barrier.mapPartitionsWithoutRetry(
        sc.parallelize(List.of(1, 2), 2), it -> {
          Collective.communicator();
          return Collections.<Integer>emptyIterator();
        }).collect());
    assertTrue(String.valueOf(e.getMessage()).contains("plugin is not loaded: add --conf "
        + "spark.plugins=io.sparkcollective.spark.CollectivePlugin"), e.getMessage());
  }
}
