package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.testing.TestKeyStores;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Executors all-reduce over mutual TLS, with stores given the way Spark's own spark.ssl.* are, or with only
 * Spark's own security settings (spark.authenticate, spark.ssl.*, spark.network.crypto.enabled) and no key of the
 * plugin's.
 */
@Timeout(300)
class LocalClusterTlsTest {
  /** Where the tests' executors leave their reports; removed after the class. */
  @org.junit.jupiter.api.io.TempDir
  static Path scratch;


  @Test
  void shouldAllReduceAcrossExecutorsOverTls() throws Exception {
    Path dir = Files.createTempDirectory(scratch, "collective-tls");
    Path store = TestKeyStores.selfSigned(dir, "cluster");
    SparkConf conf = SparkTests.withPlugin("local-cluster[2,1,1024]", "collective-tls")
        .set("spark.collective.transport.tls.enabled", "true")
        .set("spark.collective.transport.tls.keyStore", store.toString())
        .set("spark.collective.transport.tls.keyStorePassword", TestKeyStores.PASSWORD)
        .set("spark.collective.transport.tls.trustStore", store.toString())
        .set("spark.collective.transport.tls.trustStorePassword", TestKeyStores.PASSWORD);
    JavaSparkContext sc = new JavaSparkContext(conf);
    try {
      List<Float> sums = Barrier.mapPartitions(sc.parallelize(List.of(1, 2), 2), it -> {
        float[] x = {it.next()};
        Collective.communicator().allReduce(x, ReduceOp.SUM);
        return Collections.singletonList(x[0]).iterator();
      }).collect();
      assertEquals(List.of(3f, 3f), sums);
    } finally {
      sc.stop();
    }
  }

  @Test
  void shouldAuthenticateAndEncryptWithSparksOwnSettingsOnly() throws Exception {
    Path dir = Files.createTempDirectory(scratch, "collective-spark-security");
    Path store = TestKeyStores.selfSigned(dir, "cluster");
    SparkConf conf = SparkTests.withPlugin("local-cluster[2,1,1024]", "collective-spark-security")
        .set("spark.authenticate", "true")
        .set("spark.authenticate.secret", "the application's secret, Spark's own")
        .set("spark.ssl.enabled", "true")
        .set("spark.ssl.keyStore", store.toString())
        .set("spark.ssl.keyStorePassword", TestKeyStores.PASSWORD)
        .set("spark.ssl.keyPassword", TestKeyStores.PASSWORD)
        .set("spark.ssl.trustStore", store.toString())
        .set("spark.ssl.trustStorePassword", TestKeyStores.PASSWORD)
        .set("spark.ssl.protocol", "TLSv1.3")
        .set("spark.ssl.enabledAlgorithms", "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384");
    JavaSparkContext sc = new JavaSparkContext(conf);
    try {
      List<String> seen = Barrier.mapPartitions(sc.parallelize(List.of(1, 2), 2), it -> {
        float[] x = {it.next()};
        Collective.communicator().allReduce(x, ReduceOp.SUM);
        CollectiveExecutorPlugin plugin = CollectiveExecutorPlugin.instance();
        return Collections.singletonList(x[0] + " tls=" + plugin.config().tlsEnabled() + " ciphers="
            + plugin.config().get(io.sparkcollective.core.config.CollectiveConfig.TLS_ENABLED_ALGORITHMS)).iterator();
      }).collect();
      String expected = "3.0 tls=true ciphers=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384";
      assertEquals(List.of(expected, expected), seen, "both executors derived the same secret from Spark's "
          + "(else their handshake fails) and took TLS from spark.ssl.*");
    } finally {
      sc.stop();
    }
  }

  @Test
  void shouldEncryptCollectivesWhenSparkEncryptsItsNetwork() throws Exception {
    SparkConf conf = SparkTests.withPlugin("local-cluster[2,1,1024]", "collective-spark-crypto")
        .set("spark.authenticate", "true")
        .set("spark.authenticate.secret", "the application's secret, Spark's own")
        .set("spark.network.crypto.enabled", "true");
    JavaSparkContext sc = new JavaSparkContext(conf);
    try {
      List<String> seen = Barrier.mapPartitions(sc.parallelize(List.of(1, 2), 2), it -> {
        float[] x = {it.next(), 0.5f};
        Collective.communicator().allReduce(x, ReduceOp.SUM);
        return Collections.singletonList(x[0] + "," + x[1] + " "
            + CollectiveExecutorPlugin.instance().config().dataProtection()).iterator();
      }).collect();
      assertEquals(List.of("3.0,1.0 encrypt", "3.0,1.0 encrypt"), seen,
          "spark.network.crypto.enabled turned AES-GCM on for both executors, which then summed right");
    } finally {
      sc.stop();
    }
  }
}
