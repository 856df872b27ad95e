package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.engine.EngineCommunicator;
import io.sparkcollective.core.engine.LocalGroup;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.transport.tcp.TcpEndpoint;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class CollectiveMetricsTest {

  @Test
  void shouldCountOperationsBytesAndFailuresOfACommunicator() throws Exception {
    MetricRegistry registry = new MetricRegistry();
    CollectiveMetrics metrics = new CollectiveMetrics(registry);
    LocalGroup group = LocalGroup.create(2);
    ((EngineCommunicator) group.communicator(0)).observe(metrics);
    group.run(comm -> {
      comm.allReduce(new float[1000], ReduceOp.SUM);
      comm.allReduce(new double[10], ReduceOp.MAX);
      return null;
    });
    assertEquals(2, registry.timer("operations").getCount());
    assertEquals(1000 * 4 + 10 * 8, registry.counter("bytes").getCount());
    group.communicator(1).close();
    assertThrows(CollectiveException.class, () -> group.communicator(0).allReduce(new float[1], ReduceOp.SUM));
    assertEquals(1, registry.counter("failures").getCount());
    metrics.groupFormed(3_000_000);
    assertEquals(1, registry.timer("groupSetup").getCount());
    assertEquals(List.of("bytes", "failures", "groupSetup", "operations"), List.copyOf(registry.getNames()));
    group.close();
  }

  /** Two endpoints of this host all-reduce through each other: the gauges show the connection and the rings. */
  @Test
  void shouldReportTheEndpointsConnectionsAndSharedMemoryPayloads() throws Exception {
    MetricRegistry registry = new MetricRegistry();
    CollectiveMetrics metrics = new CollectiveMetrics(registry);
    CollectiveConfig config = CollectiveConfig.defaults();
    try (TcpEndpoint e0 = TcpEndpoint.start("127.0.0.1", 0, "secret", config);
        TcpEndpoint e1 = TcpEndpoint.start("127.0.0.1", 0, "secret", config)) {
      metrics.watch(e0);
      assertEquals(0, registry.getGauges().get("openConnections").getValue());
      assertEquals(0L, registry.getGauges().get("sharedMemoryPayloads").getValue());
      assertEquals(0L, registry.getGauges().get("refusedConnections").getValue());
      assertEquals(0L, registry.getGauges().get("droppedMessages").getValue());
      try (TcpEndpoint stranger = TcpEndpoint.start("127.0.0.1", 0, "another secret", config)) {
        org.junit.jupiter.api.Assertions.assertThrows(io.sparkcollective.core.api.CollectiveException.class,
            () -> stranger.join("stranger", 0, List.of(stranger.address(), e0.address())));
      }
      long until = System.nanoTime() + 5_000_000_000L;
      while ((Long) registry.getGauges().get("refusedConnections").getValue() == 0 && System.nanoTime() < until) {
        Thread.sleep(5);
      }
      assertTrue((Long) registry.getGauges().get("refusedConnections").getValue() >= 1, "a wrong secret is counted");
      List<InetSocketAddress> peers = List.of(e0.address(), e1.address());
      ExecutorService pool = Executors.newFixedThreadPool(2);
      try {
        List<Future<Object>> ranks = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
          int rank = r;
          ranks.add(pool.submit(() -> {
            try (Communicator c = TcpGroup.join(rank == 0 ? e0 : e1, "metrics", rank, peers, config)) {
              float[] v = new float[100_000];
              Arrays.fill(v, 1f);
              c.allReduce(v, ReduceOp.SUM);
              assertEquals(2f, v[99_999]);
            }
            return null;
          }));
        }
        for (Future<Object> f : ranks) {
          f.get(60, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
      assertTrue((Integer) registry.getGauges().get("openConnections").getValue() >= 1);
      long shared = (Long) registry.getGauges().get("sharedMemoryPayloads").getValue();
      assertTrue(shared > 0, "payloads from the endpoint on the same host came through shared memory");
      assertEquals(e0.sharedMemoryPayloads(), shared);
    }
  }
}
