package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.TcpCluster;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Whether a rank reaches every peer through memory (what AUTO's table sends small messages by). */
@Timeout(60)
class MemoryToAllTest {

  /**
   * Rank r on endpoint {@code endpointOf[r]} of three on loopback; every rank must answer {@code expected}.
   */
  @ParameterizedTest(name = "shared memory {0} bytes, progress {1}, ranks on endpoints {2}: {3}")
  @CsvSource({"16777216, caller, 0 1 2, true", "0, caller, 0 1 2, false", "16777216, eventLoop, 0 1 2, false",
      "0, caller, 1 1 1, true", "0, caller, 0 0 1, false", "16777216, caller, 0 0 2, true"})
  void shouldReachEveryPeerThroughMemoryOnlyWithRingsToTheHostsOtherEndpoints(String ringBytes, String progress,
      String endpoints, boolean expected) throws Exception {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, ringBytes,
        CollectiveConfig.PROGRESS, progress, CollectiveConfig.JOIN_TIMEOUT_MS, "10000"));
    String[] at = endpoints.split(" ");
    try (TcpCluster cluster = new TcpCluster(3, config)) {
      List<InetSocketAddress> peers = new ArrayList<>();
      for (String e : at) {
        peers.add(cluster.addresses().get(Integer.parseInt(e)));
      }
      ExecutorService pool = Executors.newFixedThreadPool(at.length);
      List<TcpTransport> transports = new ArrayList<>();
      try {
        List<Future<TcpTransport>> joins = new ArrayList<>();
        for (int r = 0; r < at.length; r++) {
          int rank = r;
          TcpEndpoint endpoint = cluster.endpoint(Integer.parseInt(at[r]));
          joins.add(pool.submit(() -> endpoint.join("memory", rank, peers)));
        }
        for (Future<TcpTransport> f : joins) {
          transports.add(f.get());
        }
        for (int r = 0; r < transports.size(); r++) {
          assertEquals(expected, transports.get(r).memoryToAll(), "rank " + r);
        }
      } finally {
        for (TcpTransport t : transports) {
          t.close();
        }
        pool.shutdownNow();
      }
    }
  }
}
