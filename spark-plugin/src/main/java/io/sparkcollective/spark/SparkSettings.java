package io.sparkcollective.spark;

import io.sparkcollective.core.config.CollectiveConfig;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.SparkConf;
import scala.Tuple2;

/** Reads every {@code spark.collective.*} key of a SparkConf into a {@link CollectiveConfig}. */
final class SparkSettings {
  private SparkSettings() {}

  static CollectiveConfig config(SparkConf conf) {
    Map<String, String> settings = new HashMap<>();
    // A cluster that encrypts Spark's traffic gets encrypted collectives too, from the same stores, unless
    // spark.collective.transport.tls.* says otherwise (those keys, read below, win).
    if (conf.getBoolean("spark.ssl.enabled", false)) {
      settings.put(CollectiveConfig.TLS_ENABLED, "true");
      copy(conf, "spark.ssl.keyStore", CollectiveConfig.TLS_KEY_STORE, settings);
      copy(conf, "spark.ssl.keyStorePassword", CollectiveConfig.TLS_KEY_STORE_PASSWORD, settings);
      copy(conf, "spark.ssl.keyPassword", CollectiveConfig.TLS_KEY_PASSWORD, settings);
      copy(conf, "spark.ssl.enabledAlgorithms", CollectiveConfig.TLS_ENABLED_ALGORITHMS, settings);
      copy(conf, "spark.ssl.keyStoreType", CollectiveConfig.TLS_KEY_STORE_TYPE, settings);
      copy(conf, "spark.ssl.trustStore", CollectiveConfig.TLS_TRUST_STORE, settings);
      copy(conf, "spark.ssl.trustStorePassword", CollectiveConfig.TLS_TRUST_STORE_PASSWORD, settings);
      copy(conf, "spark.ssl.protocol", CollectiveConfig.TLS_PROTOCOL, settings);
    }
    // Spark's own encryption of its RPC and block traffic asks for encrypted collectives too.
    if (conf.getBoolean("spark.network.crypto.enabled", false)) {
      settings.put(CollectiveConfig.DATA_PROTECTION, "encrypt");
    }
    for (Tuple2<String, String> kv : conf.getAllWithPrefix(CollectiveConfig.SPARK_PREFIX)) {
      settings.put(kv._1(), kv._2());
    }
    return CollectiveConfig.from(settings);
  }

  /** Whether Spark authenticates its own connections (spark.authenticate): then its secret is the plugin's too. */
  static boolean sparkAuthenticates(SparkConf conf) {
    return conf.getBoolean("spark.authenticate", false);
  }

  /**
   * The collective secret derived from Spark's application secret (HMAC-SHA256 keyed with Spark's secret over
   * a label and the application id, hex): each side computes it, so no secret of the plugin crosses the
   * driver's RPC, and it is not Spark's own secret (a leak of one does not give the other).
   */
  static String derivedSecret(String sparkSecret, String appId) {
    try {
      javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
      mac.init(new javax.crypto.spec.SecretKeySpec(sparkSecret.getBytes(java.nio.charset.StandardCharsets.UTF_8),
          "HmacSHA256"));
      byte[] d = mac.doFinal(("spark-collective secret for " + appId).getBytes(
          java.nio.charset.StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder();
      for (byte x : d) {
        hex.append(String.format("%02x", x));
      }
      return hex.toString();
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }

  private static void copy(SparkConf conf, String sparkKey, String key, Map<String, String> settings) {
    if (conf.contains(sparkKey)) {
      settings.put(key, conf.get(sparkKey));
    }
  }

  /** Settings Spark combines badly with barrier stages, as warnings (the plugin itself can still run). */
  static java.util.List<String> barrierWarnings(SparkConf conf) {
    java.util.List<String> warnings = new java.util.ArrayList<>();
    if (conf.getBoolean("spark.dynamicAllocation.enabled", false)) {
      warnings.add("spark.dynamicAllocation.enabled=true: Spark refuses barrier stages with dynamic allocation");
    }
    if (conf.getBoolean("spark.speculation", false)) {
      warnings.add("spark.speculation=true: Spark refuses speculative tasks in barrier stages");
    }
    return warnings;
  }

}
