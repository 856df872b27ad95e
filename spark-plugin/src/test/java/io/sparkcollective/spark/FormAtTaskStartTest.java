package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import java.util.Collections;
import java.util.List;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Barrier tasks begin forming their group as they start (group.formAtTaskStart, the default): the group is
 * ready before any task asks, the first call uses it, and stages whose tasks never call end cleanly and
 * leave no threads or groups behind; with the setting off, nothing forms until a call. Real executor JVMs
 * (local-cluster, 2 executors x 2 cores).
 */
@Timeout(300)
class FormAtTaskStartTest {
  private static final int TASKS = 4;
  private static final int LENGTH = 1000;

  /** Each task waits up to {@code waitMs} for its group to form without calling, then all-reduces. */
  private static List<String> stage(JavaSparkContext sc, long waitMs) {
    return Barrier.mapPartitionsWithoutRetry(SparkTests.partitions(sc, TASKS), it -> {
      int rank = BarrierTaskContext.get().partitionId();
      long end = System.nanoTime() + waitMs * 1_000_000L;
      boolean ahead = CollectiveExecutorPlugin.instance().formedAhead();
      while (!ahead && System.nanoTime() < end) {
        Thread.sleep(10);
        ahead = CollectiveExecutorPlugin.instance().formedAhead();
      }
      int open = CollectiveExecutorPlugin.instance().endpoint().openConnections();
      Communicator comm = Collective.communicator();
      float[] g = SparkTests.seededGradient(5, rank, LENGTH);
      comm.allReduce(g, ReduceOp.SUM);
      float[] want = SparkTests.seededSum(5, TASKS, LENGTH);
      String ok = java.util.Arrays.equals(g, want) ? "sum ok" : "wrong sum";
      return Collections.singletonList(rank + " " + (open > 0) + " " + ahead + " " + ok).iterator();
    }).collect();
  }

  /** The names of the plugin's threads (collective-*) in each task's executor JVM, sorted. */
  private static List<String> collectiveThreads(JavaSparkContext sc) {
    return Barrier.mapPartitionsWithoutRetry(SparkTests.partitions(sc, TASKS), it -> {
      Thread.sleep(200);
      String names = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
          .filter(n -> n.startsWith("collective")).sorted().collect(java.util.stream.Collectors.joining(","));
      return Collections.singletonList(names).iterator();
    }).collect();
  }

  /** The most threads of the plugin in one executor, counting only those whose name passes {@code kind}. */
  private static int most(List<String> perTask, java.util.function.Predicate<String> kind) {
    return perTask.stream().mapToInt(names -> (int) java.util.Arrays.stream(names.split(","))
        .filter(n -> !n.isEmpty() && kind.test(n)).count()).max().getAsInt();
  }

  @Test
  void shouldFormTheGroupBeforeTheFirstCallAndDropItForTasksThatNeverCall() {
    SparkConf conf = SparkTests.withPlugin("local-cluster[2,2,1024]", "form-at-start");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      SparkTests.partitions(sc, 8).count(); // both executors up
      List<String> rows = stage(sc, 20_000);
      for (String r : rows) {
        assertTrue(r.endsWith(" true true sum ok"), "formed before the first call and used by it: " + rows);
      }
      // Stages whose tasks never call: each forms a group in the background and drops it at the task's end.
      List<String> before = collectiveThreads(sc);
      for (int s = 0; s < 30; s++) {
        assertEquals(TASKS, Barrier.mapPartitionsWithoutRetry(SparkTests.partitions(sc, TASKS),
            it -> Collections.singletonList(1).iterator()).count());
      }
      List<String> after = collectiveThreads(sc);
      String seen = "plugin threads per executor before and after 30 stages that never called: " + before + " -> "
          + after;
      // Formers are pooled (idle ones linger a minute): one per task slot of the executor (2), and one more for a
      // formation still stopping as the next stage's begin (a formation that slept out its delay after its task
      // had ended kept 4-6 busy). Nothing else may grow.
      java.util.function.Predicate<String> former = n -> n.equals("collective-form");
      assertTrue(most(after, former) <= 3, seen);
      assertTrue(most(after, former.negate()) <= most(before, former.negate()), seen);
      for (String r : stage(sc, 20_000)) {
        assertTrue(r.endsWith(" true true sum ok"), "a stage after them forms its group as before: " + r);
      }
    }
  }

  @Test
  void shouldFormNothingBeforeTheFirstCallWhenTheSettingIsOff() {
    SparkConf conf = SparkTests.withPlugin("local-cluster[2,2,1024]", "form-at-call")
        .set(CollectiveConfig.SPARK_PREFIX + CollectiveConfig.FORM_AT_TASK_START, "false");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      SparkTests.partitions(sc, 8).count();
      List<String> rows = stage(sc, 1000);
      assertEquals(TASKS, rows.size());
      for (String r : rows) {
        // A fresh application: no executor has had a reason to connect before the first call.
        assertTrue(r.endsWith(" false false sum ok"), "nothing formed or connected before the first call, which then "
            + "formed the group: " + rows);
      }
    }
  }
}
