package io.sparkcollective.spark;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * The Spark plugin: {@code --conf spark.plugins=io.sparkcollective.spark.CollectivePlugin}. Its driver side
 * ({@link CollectiveDriverPlugin}) makes the application's secret and forms groups; its executor side
 * ({@link CollectiveExecutorPlugin}) runs one endpoint per executor JVM and gives barrier tasks their
 * communicator through {@link Collective#communicator()}.
 */
public final class CollectivePlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new CollectiveDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new CollectiveExecutorPlugin();
  }
}
