package io.sparkcollective.spark;

import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.Communicator;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.TaskContext;

/**
 * What a barrier task calls: {@code Collective.communicator().allReduce(grad, ReduceOp.SUM)}. The group is
 * the task's barrier stage attempt; the rank is the partition id. Usable from Java and Scala closures.
 */
public final class Collective {
  private Collective() {}

  /**
   * The communicator of the calling barrier task (formed on the first call of the task).
   *
   * @throws CollectiveUsageException outside a Spark task, outside a barrier stage, or without the plugin,
   *     saying what to add
   */
  public static Communicator communicator() {
    TaskContext tc = TaskContext.get();
    if (tc == null) {
      throw new CollectiveUsageException("Collective.communicator() is called outside a Spark task; call it inside "
          + "rdd.barrier().mapPartitions(...)");
    }
    CollectiveExecutorPlugin plugin = CollectiveExecutorPlugin.instance();
    if (plugin == null) {
      throw new CollectiveUsageException("the spark-collective plugin is not loaded: add "
          + "--conf spark.plugins=io.sparkcollective.spark.CollectivePlugin (and the plugin jar with --jars)");
    }
    if (!(tc instanceof BarrierTaskContext)) {
      throw new CollectiveUsageException("Collective.communicator() needs a barrier stage: run the stage with "
          + "rdd.barrier().mapPartitions(...) (or Barrier.mapPartitions for a JavaRDD)");
    }
    return plugin.communicator(tc);
  }
}
