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

/** Executors all-reduce over mutual TLS, with stores given the way Spark's own spark.ssl.* are. */
@Timeout(300)
class LocalClusterTlsTest {

  @Test
  void shouldAllReduceAcrossExecutorsOverTls() throws Exception {
    Path dir = Files.createTempDirectory("collective-tls");
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
}
