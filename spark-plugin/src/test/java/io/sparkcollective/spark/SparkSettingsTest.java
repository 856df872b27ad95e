package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.config.CollectiveConfig;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class SparkSettingsTest {

  @Test
  void shouldReadCollectiveKeysAndFollowSparkSslUnlessOverridden() {
    SparkConf conf = new SparkConf(false)
        .set("spark.collective.operation.timeoutMs", "1234")
        .set("spark.collective.port", "7077")
        .set("spark.ssl.enabled", "true")
        .set("spark.ssl.keyStore", "/etc/spark/ks.p12")
        .set("spark.ssl.keyStorePassword", "pw")
        .set("spark.ssl.trustStore", "/etc/spark/ts.p12")
        .set("spark.collective.transport.tls.protocol", "TLSv1.2");
    CollectiveConfig c = SparkSettings.config(conf);
    assertEquals(1234, c.operationTimeoutMs());
    assertTrue(c.tlsEnabled());
    assertEquals("/etc/spark/ks.p12", c.get(CollectiveConfig.TLS_KEY_STORE));
    assertEquals("/etc/spark/ts.p12", c.get(CollectiveConfig.TLS_TRUST_STORE));
    assertEquals("TLSv1.2", c.get(CollectiveConfig.TLS_PROTOCOL));
    assertEquals(7077, c.portFrom());
    assertEquals(7077, c.portTo());
    assertFalse(SparkSettings.config(new SparkConf(false)).tlsEnabled());
  }

  @Test
  void shouldNameABadSettingAndWarnAboutBarrierIncompatibleOnes() {
    CollectiveUsageException e = assertThrows(CollectiveUsageException.class,
        () -> SparkSettings.config(new SparkConf(false).set("spark.collective.segmentBytes", "12")));
    assertTrue(e.getMessage().contains("spark.collective.segmentBytes"), e.getMessage());
    SparkConf risky = new SparkConf(false).set("spark.dynamicAllocation.enabled", "true")
        .set("spark.speculation", "true");
    assertEquals(2, SparkSettings.barrierWarnings(risky).size());
    CollectiveConfig range = SparkSettings.config(new SparkConf(false).set("spark.collective.port", "7100-7199"));
    assertEquals(7100, range.portFrom());
    assertEquals(7199, range.portTo());
    for (String badPort : new String[] {"7199-7100", "70000", "http", "0-5"}) {
      CollectiveUsageException p = assertThrows(CollectiveUsageException.class,
          () -> SparkSettings.config(new SparkConf(false).set("spark.collective.port", badPort)));
      assertTrue(p.getMessage().contains("spark.collective.port"), p.getMessage());
    }
    assertTrue(SparkSettings.barrierWarnings(new SparkConf(false)).isEmpty());
  }

  @Test
  void shouldDeriveTheSecretFromSparksPerApplicationAndNeverEqualToIt() {
    String a = SparkSettings.derivedSecret("spark's secret", "app-1");
    assertEquals(a, SparkSettings.derivedSecret("spark's secret", "app-1"), "every executor gets the same");
    assertEquals(64, a.length());
    assertFalse(a.equals(SparkSettings.derivedSecret("spark's secret", "app-2")), "another application, another");
    assertTrue(!a.equals(SparkSettings.derivedSecret("another secret", "app-1")));
    assertTrue(!a.contains("spark's secret"));
    SparkConf conf = new SparkConf(false).set("spark.ssl.enabled", "true").set("spark.ssl.keyStore", "/k")
        .set("spark.ssl.trustStore", "/t").set("spark.ssl.keyPassword", "kp")
        .set("spark.ssl.enabledAlgorithms", "TLS_AES_128_GCM_SHA256");
    CollectiveConfig c = SparkSettings.config(conf);
    assertEquals("kp", c.get(CollectiveConfig.TLS_KEY_PASSWORD));
    assertEquals("TLS_AES_128_GCM_SHA256", c.get(CollectiveConfig.TLS_ENABLED_ALGORITHMS));
  }

  @Test
  void shouldEncryptWhenSparkEncryptsItsNetworkUnlessTheCollectiveKeySaysOtherwise() {
    SparkConf crypto = new SparkConf(false).set("spark.network.crypto.enabled", "true");
    assertEquals(DataProtection.ENCRYPT, SparkSettings.config(crypto).dataProtection());
    assertEquals(DataProtection.AUTHENTICATE, SparkSettings.config(crypto.clone()
        .set("spark.collective.transport.dataProtection", "authenticate")).dataProtection());
    assertEquals(DataProtection.NONE, SparkSettings.config(new SparkConf(false)).dataProtection());
  }
}
