package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A same-host peer that will not map the ring offered to it (shared memory off, or Netty's threads read its
 * connections) declines it, and the offering side deletes the file and unmaps the ring at once instead of
 * keeping 16 MiB of /dev/shm for the connection's life; payloads keep going over the socket.
 */
@Timeout(60)
class DeclinedRingTest {
  private static final CollectiveConfig OFFERS = CollectiveConfig.from(Map.of(CollectiveConfig.JOIN_TIMEOUT_MS,
      "5000", CollectiveConfig.SHARED_MEMORY_BYTES, "16777216"));

  /** Ring files of this process in /dev/shm now, whether mapped or not. */
  private static long ringFiles() throws Exception {
    String mine = "spark-collective-" + ProcessHandle.current().pid() + "-";
    try (Stream<Path> files = Files.list(OFFERS.sharedMemoryDir())) {
      return files.filter(f -> f.getFileName().toString().startsWith(mine)).count();
    }
  }

  @ParameterizedTest(name = "receiver: {0}")
  @ValueSource(strings = {"sharedMemoryBytes=0", "progress=eventLoop"})
  void aDeclinedRingIsDeletedAndUnmappedAtOnce(String receiver) throws Exception {
    String[] kv = receiver.split("=");
    CollectiveConfig declines = CollectiveConfig.from(Map.of(CollectiveConfig.JOIN_TIMEOUT_MS, "5000",
        "transport." + kv[0], kv[1]));
    long filesBefore = ringFiles();
    long mappedBefore = TcpTransportTest.mappedRings();
    try (TcpCluster cluster = new TcpCluster(List.of(OFFERS, declines))) {
      List<Communicator> g = cluster.group("declined");
      float[][] v = {new float[1 << 16], new float[1 << 16]};
      for (int r = 0; r < 2; r++) {
        java.util.Arrays.fill(v[r], r + 1);
      }
      GroupHarness.run(g, Duration.ofSeconds(20), c -> {
        c.allReduce(v[c.rank()], ReduceOp.SUM);
        return null;
      });
      assertEquals(3f, v[0][12345]);
      assertEquals(3f, v[1][0]);
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while ((ringFiles() > filesBefore || TcpTransportTest.mappedRings() > mappedBefore)
          && System.nanoTime() < until) {
        Thread.sleep(10);
      }
      assertEquals(filesBefore, ringFiles(), "a declined ring's file is still in " + OFFERS.sharedMemoryDir());
      assertEquals(mappedBefore, TcpTransportTest.mappedRings(), "a declined ring is still mapped");
      assertEquals(0, cluster.endpoint(0).sharedMemoryPayloads() + cluster.endpoint(1).sharedMemoryPayloads());
      assertTrue(cluster.endpoint(0).openConnections() > 0, "the connection itself stays");
      for (Communicator c : g) {
        c.close();
      }
    }
  }
}
