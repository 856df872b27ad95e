package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.NettyLeaks;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.testing.TestKeyStores;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Mutual TLS between endpoints, with a self-signed key pair made by the JDK's keytool for the test. */
@Timeout(120)
class TlsTransportTest {
  @org.junit.jupiter.api.AfterAll
  static void noBufferLeaked() throws Exception {
    org.junit.jupiter.api.Assertions.assertTrue(NettyLeaks.active(), "the build must install the leak detector");
    java.util.List<String> leaks = NettyLeaks.collect();
    org.junit.jupiter.api.Assertions.assertTrue(leaks.isEmpty(), "Netty buffers leaked: " + leaks);
  }

  @TempDir
  static Path dir;
  private static CollectiveConfig tls;

  @BeforeAll
  static void makeKeyStore() throws Exception {
    Path store = TestKeyStores.selfSigned(dir, "peer");
    tls = CollectiveConfig.from(Map.of(
        CollectiveConfig.TLS_ENABLED, "true",
        CollectiveConfig.TLS_KEY_STORE, store.toString(),
        CollectiveConfig.TLS_KEY_STORE_PASSWORD, TestKeyStores.PASSWORD,
        CollectiveConfig.TLS_TRUST_STORE, store.toString(),
        CollectiveConfig.TLS_TRUST_STORE_PASSWORD, TestKeyStores.PASSWORD,
        CollectiveConfig.JOIN_TIMEOUT_MS, "3000",
        CollectiveConfig.CONNECT_TIMEOUT_MS, "2000"));
  }

  @Test
  void shouldAllReduceOverMutualTls() throws Exception {
    try (TcpCluster cluster = new TcpCluster(3, tls)) {
      List<Communicator> group = cluster.group("tls");
      GroupHarness.run(group, Duration.ofSeconds(60), comm -> {
        float[] data = new float[300_000];
        Arrays.fill(data, comm.rank() + 1);
        comm.allReduce(data, ReduceOp.SUM);
        assertEquals(6f, data[299_999]);
        return null;
      });
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldNotLetAPlainEndpointJoinATlsGroup() throws Exception {
    CollectiveConfig plain = CollectiveConfig.from(Map.of(CollectiveConfig.JOIN_TIMEOUT_MS, "3000",
        CollectiveConfig.CONNECT_TIMEOUT_MS, "2000"));
    try (TcpCluster cluster = new TcpCluster(1, tls);
        TcpEndpoint outsider = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, plain)) {
      assertThrows(CollectiveException.class, () -> TcpGroup.join(outsider, "tls-only", 1,
          List.of(cluster.endpoint(0).address(), outsider.address()), plain));
    }
  }

  @Test
  void shouldNameTheSettingWhenAKeyStoreCannotBeLoaded() {
    CollectiveConfig broken = CollectiveConfig.from(Map.of(
        CollectiveConfig.TLS_ENABLED, "true",
        CollectiveConfig.TLS_KEY_STORE, dir.resolve("missing.p12").toString(),
        CollectiveConfig.TLS_TRUST_STORE, dir.resolve("missing.p12").toString()));
    CollectiveUsageException e = assertThrows(CollectiveUsageException.class,
        () -> TcpEndpoint.start("127.0.0.1", 0, "s", broken));
    assertTrue(e.getMessage().contains("spark.collective.transport.tls.keyStore"), e.getMessage());
    CollectiveUsageException missing = assertThrows(CollectiveUsageException.class,
        () -> CollectiveConfig.from(Map.of(CollectiveConfig.TLS_ENABLED, "true")));
    assertTrue(missing.getMessage().contains("transport.tls.keyStore"), missing.getMessage());
  }
}
