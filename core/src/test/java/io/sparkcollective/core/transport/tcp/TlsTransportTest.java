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

  /**
   * A certificate the trust store accepts but that does not name the address dialled (issued to another
   * machine, or a CA bundle's any other certificate) is refused by the dialling side, unless told otherwise.
   */
  @Test
  void shouldRefuseATrustedCertificateThatNamesAnotherMachine() throws Exception {
    Path other = TestKeyStores.selfSignedFor(dir, "elsewhere", "dns:elsewhere.example,ip:198.18.7.7");
    Map<String, String> settings = new java.util.HashMap<>(Map.of(
        CollectiveConfig.TLS_ENABLED, "true",
        CollectiveConfig.TLS_KEY_STORE, other.toString(),
        CollectiveConfig.TLS_KEY_STORE_PASSWORD, TestKeyStores.PASSWORD,
        CollectiveConfig.TLS_TRUST_STORE, other.toString(),
        CollectiveConfig.TLS_TRUST_STORE_PASSWORD, TestKeyStores.PASSWORD,
        CollectiveConfig.JOIN_TIMEOUT_MS, "3000",
        CollectiveConfig.CONNECT_TIMEOUT_MS, "2000"));
    try (TcpCluster cluster = new TcpCluster(2, CollectiveConfig.from(settings))) {
      Exception e = assertThrows(Exception.class, () -> cluster.group("wrong-name"));
      Throwable cause = e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
      assertTrue(cause instanceof CollectiveException, String.valueOf(cause));
      StringBuilder chain = new StringBuilder();
      for (Throwable t = cause; t != null; t = t.getCause()) {
        chain.append(t).append(" / ");
      }
      assertTrue(chain.toString().contains("No subject alternative names matching IP address 127.0.0.1"),
          chain.toString());
    }
    settings.put(CollectiveConfig.TLS_VERIFY_PEER_NAME, "false");
    try (TcpCluster cluster = new TcpCluster(2, CollectiveConfig.from(settings))) {
      GroupHarness.closeAll(cluster.group("name-not-checked"));
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
