package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.time.NanoClock;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The registry of one endpoint's ranks while ranks of one group come and go at the same moment, as they do
 * when one task of a stage fails while its executor-mates are still joining.
 */
@Timeout(120)
class GroupRegistryTest {
  private static final int ROUNDS = 100_000;

  private static TcpTransport rank(TcpEndpoint e, long group, int rank, int size) {
    List<InetSocketAddress> peers = new ArrayList<>();
    String[] keys = new String[size];
    for (int r = 0; r < size; r++) {
      peers.add(e.address());
      keys[r] = e.addressKey();
    }
    return new TcpTransport(e, group, "g" + group, rank, peers, keys);
  }

  /**
   * A rank that registers while its group's last other rank unregisters is found afterwards: it must not land
   * in the group's slot that the leaving rank has just removed (where no frame, JOIN or ABORT would reach it).
   */
  @Test
  void shouldFindARankThatRegistersWhileTheGroupsLastOtherRankLeaves() throws Exception {
    try (TcpEndpoint e = TcpEndpoint.start("127.0.0.1", 0, "s", CollectiveConfig.defaults(), NanoClock.SYSTEM)) {
      GroupRegistry registry = new GroupRegistry(e::addressKey, NanoClock.SYSTEM);
      ExecutorService pool = Executors.newFixedThreadPool(2);
      CyclicBarrier together = new CyclicBarrier(2);
      try {
        Future<?> leaver = pool.submit(() -> {
          for (int i = 0; i < ROUNDS; i++) {
            TcpTransport r0 = rank(e, i, 0, 2);
            registry.register(r0);
            together.await(10, TimeUnit.SECONDS);
            registry.unregister(r0);
            together.await(10, TimeUnit.SECONDS);
          }
          return null;
        });
        Future<Integer> joiner = pool.submit(() -> {
          int lost = 0;
          for (int i = 0; i < ROUNDS; i++) {
            TcpTransport r1 = rank(e, i, 1, 2);
            together.await(10, TimeUnit.SECONDS);
            registry.register(r1);
            if (registry.registered(i, 1) != r1) {
              lost++;
            }
            together.await(10, TimeUnit.SECONDS);
            registry.unregister(r1);
            assertNull(registry.registered(i, 1), "rank 1 of group " + i + " still found after it left");
          }
          return lost;
        });
        leaver.get(100, TimeUnit.SECONDS);
        assertEquals(0, joiner.get(100, TimeUnit.SECONDS), "rounds in which a registered rank was not found");
      } finally {
        pool.shutdownNow();
      }
    }
  }

  /** A JOIN that came before its rank registered is handed to it at registration. */
  @Test
  void shouldHandAJoinThatCameEarlyToItsRankWhenItRegisters() throws Exception {
    try (TcpEndpoint e = TcpEndpoint.start("127.0.0.1", 0, "s", CollectiveConfig.defaults(), NanoClock.SYSTEM)) {
      GroupRegistry registry = new GroupRegistry(e::addressKey, NanoClock.SYSTEM);
      registry.onJoin(e.addressKey(), 7, 0, 1, 2);
      TcpTransport r1 = rank(e, 7, 1, 2);
      registry.register(r1);
      assertSame(r1, registry.registered(7, 1));
      assertEquals(true, r1.hasJoined(0), "the early JOIN of rank 0 reached rank 1");
      registry.unregister(r1);
    }
  }
}
