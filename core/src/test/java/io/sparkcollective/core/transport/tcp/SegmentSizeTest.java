package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.EngineCommunicator;
import io.sparkcollective.core.serialization.KryoObjectSerializer;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.SendTap;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.Transport;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every rank of a group cuts its messages into segments of one size, chosen from the group's addresses and the
 * settings: {@code segmentBytes} where the processes meet over sockets only, {@code localSegmentBytes} (at most
 * {@code segmentBytes}) where executors of one host share memory.
 */
@Timeout(120)
class SegmentSizeTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);

  @ParameterizedTest(name = "{0}")
  @CsvSource({
      "sockets only (no shared memory), 0, caller, '', '', 524288",
      "sockets only (event loops), 16777216, eventLoop, '', '', 524288",
      "shared memory between the executors, 16777216, caller, '', '', 262144",
      "shared memory and a smaller segmentBytes, 16777216, caller, 65536, '', 65536",
      "sockets only with segmentBytes set, 0, caller, 262144, '', 262144",
      "shared memory with localSegmentBytes set, 16777216, caller, '', 131072, 131072"})
  void shouldCutEveryRanksMessagesIntoTheSegmentOfItsGroup(String name, String shm, String progress,
      String segmentBytes, String localSegmentBytes, int expected) throws Exception {
    Map<String, String> settings = new HashMap<>(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, shm,
        CollectiveConfig.PROGRESS, progress, CollectiveConfig.JOIN_TIMEOUT_MS, "10000"));
    if (!segmentBytes.isEmpty()) {
      settings.put(CollectiveConfig.SEGMENT_BYTES, segmentBytes);
    }
    if (!localSegmentBytes.isEmpty()) {
      settings.put(CollectiveConfig.LOCAL_SEGMENT_BYTES, localSegmentBytes);
    }
    CollectiveConfig config = CollectiveConfig.from(settings);
    int n = 2;
    int len = 1 << 20; // 4 MiB of floats: a ring chunk of 2 MiB, several segments of any size tested
    try (TcpCluster cluster = new TcpCluster(n, config)) {
      List<InetSocketAddress> peers = cluster.addresses();
      AtomicInteger[] largest = {new AtomicInteger(), new AtomicInteger()};
      List<float[]> results = new ArrayList<>(List.of(new float[0], new float[0]));
      GroupHarness.runRanks(n, LIMIT, r -> {
        Transport t = new SendTap(cluster.endpoint(r).join("segments", r, peers),
            f -> largest[r].accumulateAndGet(f.payload().size(), Math::max));
        try (EngineCommunicator comm = new EngineCommunicator(t, config, new KryoObjectSerializer())) {
          float[] v = new float[len];
          for (int i = 0; i < len; i++) {
            v[i] = (i % 1000) * (r + 1);
          }
          comm.allReduce(DataBuffer.of(v), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING));
          results.set(r, v);
        }
        return null;
      }).forEach(o -> assertEquals(null, o.error));
      float[] want = new float[len];
      for (int i = 0; i < len; i++) {
        want[i] = (i % 1000) * 3;
      }
      for (int r = 0; r < n; r++) {
        assertArrayEquals(want, results.get(r), "rank " + r);
        assertEquals(expected, largest[r].get(), name + ": largest payload rank " + r + " sent");
      }
    }
  }
}
