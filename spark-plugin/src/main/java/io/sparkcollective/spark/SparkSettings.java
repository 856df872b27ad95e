package io.sparkcollective.spark;

import io.sparkcollective.core.config.CollectiveConfig;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.SparkConf;
import scala.Tuple2;

/** Reads every {@code spark.collective.*} key of a SparkConf into a {@link CollectiveConfig}. */
final class SparkSettings {
  /** Keys of this integration itself (not of the engine). */
  static final String PORT = "spark.collective.port";

  private SparkSettings() {}

  static CollectiveConfig config(SparkConf conf) {
    Map<String, String> settings = new HashMap<>();
    for (Tuple2<String, String> kv : conf.getAllWithPrefix(CollectiveConfig.SPARK_PREFIX)) {
      String key = kv._1();
      if (!(CollectiveConfig.SPARK_PREFIX + key).equals(PORT)) {
        settings.put(key, kv._2());
      }
    }
    return CollectiveConfig.from(settings);
  }

  static int port(SparkConf conf) {
    return conf.getInt(PORT, 0);
  }
}
