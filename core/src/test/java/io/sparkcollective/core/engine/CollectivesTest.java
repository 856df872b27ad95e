package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Blocks;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Reduce-scatter, all-gather, broadcast, barrier, point-to-point, async and object collectives. */
@Timeout(300)
class CollectivesTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);

  private static LocalGroup smallSegments(int n) {
    return LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")),
        UnaryOperator.identity());
  }

  private static float input(int rank, int i) {
    return (float) ((i * 7 + rank * 13) % 31 - 15);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4, 7, 8})
  void shouldLeaveEachRanksBlockReducedAfterReduceScatter(int n) {
    LocalGroup group = smallSegments(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        for (int len : new int[] {0, 1, n - 1, n + 1, 5 * n + 3, 3001}) {
          for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX, ReduceOp.AVG}) {
            float[] data = new float[len];
            for (int i = 0; i < len; i++) {
              data[i] = input(comm.rank(), i);
            }
            comm.reduceScatter(DataBuffer.of(data), op);
            int from = Blocks.offset(len, n, comm.rank());
            int count = Blocks.length(len, n, comm.rank());
            for (int i = from; i < from + count; i++) {
              float expected = input(0, i);
              for (int r = 1; r < n; r++) {
                expected = op == ReduceOp.MAX ? Math.max(expected, input(r, i)) : expected + input(r, i);
              }
              if (op == ReduceOp.AVG) {
                expected /= n;
              }
              assertEquals(expected, data[i], "len " + len + " " + op + " element " + i);
            }
          }
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 5, 8})
  void shouldConcatenateInRankOrderOnAllGather(int n) {
    LocalGroup group = smallSegments(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        for (int len : new int[] {0, 1, 3, 2000}) {
          long[] send = new long[len];
          for (int i = 0; i < len; i++) {
            send[i] = comm.rank() * 1_000_000L + i;
          }
          long[] recv = new long[len * n];
          comm.allGather(send, recv);
          for (int r = 0; r < n; r++) {
            for (int i = 0; i < len; i++) {
              assertEquals(r * 1_000_000L + i, recv[r * len + i]);
            }
          }
          // The same through big-endian heap buffers of F32.
          ByteBuffer s = ByteBuffer.allocate(4 * len).order(ByteOrder.BIG_ENDIAN);
          for (int i = 0; i < len; i++) {
            s.putFloat(4 * i, comm.rank() + i / 1000f);
          }
          ByteBuffer out = ByteBuffer.allocateDirect(4 * len * n);
          comm.allGather(DataBuffer.of(s, DType.F32), DataBuffer.of(out, DType.F32));
          for (int r = 0; r < n; r++) {
            for (int i = 0; i < len; i++) {
              assertEquals(r + i / 1000f, out.getFloat(4 * (r * len + i)));
            }
          }
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4, 6})
  void shouldCopyRootsDataToEveryRankOnBroadcastFromEveryRoot(int n) {
    LocalGroup group = smallSegments(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        for (int root = 0; root < n; root++) {
          for (int len : new int[] {0, 1, 100, 40_000}) {
            float[] data = new float[len];
            for (int i = 0; i < len; i++) {
              data[i] = comm.rank() == root ? input(root, i) : Float.NaN;
            }
            comm.broadcast(data, root);
            for (int i = 0; i < len; i++) {
              assertEquals(input(root, i), data[i], "root " + root + " len " + len + " element " + i);
            }
          }
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldNotLetAnyRankLeaveBarrierBeforeAllArrive() {
    int n = 6;
    LocalGroup group = LocalGroup.create(n);
    AtomicInteger arrived = new AtomicInteger();
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        for (int round = 1; round <= 20; round++) {
          if (comm.rank() == round % n) {
            Thread.sleep(5);
          }
          arrived.incrementAndGet();
          comm.barrier();
          int seen = arrived.get();
          assertTrue(seen >= round * n, "round " + round + ": left the barrier after only " + seen + " arrivals");
          comm.barrier();
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldDeliverPointToPointMessagesInOrderPerTag() {
    int n = 4;
    LocalGroup group = smallSegments(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        int right = (comm.rank() + 1) % n;
        int left = (comm.rank() + n - 1) % n;
        for (int k = 0; k < 5; k++) {
          float[] out = new float[3000];
          Arrays.fill(out, comm.rank() * 100 + k);
          comm.send(out, right);
        }
        float[] other = {comm.rank()};
        comm.send(DataBuffer.of(other), right, CollectiveOptions.DEFAULT.withTag(3));
        float[] in = new float[1];
        comm.recv(DataBuffer.of(in), left, CollectiveOptions.DEFAULT.withTag(3));
        assertEquals(left, in[0]);
        for (int k = 0; k < 5; k++) {
          float[] got = new float[3000];
          comm.recv(got, left);
          float[] expected = new float[3000];
          Arrays.fill(expected, left * 100 + k);
          assertArrayEquals(expected, got);
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldOverlapAsyncAllReducesOfBucketsAndCompleteAllCorrectly() {
    int n = 4;
    int buckets = 8;
    int bucket = 5000;
    LocalGroup group = smallSegments(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        float[] grad = new float[buckets * bucket];
        for (int i = 0; i < grad.length; i++) {
          grad[i] = input(comm.rank(), i);
        }
        List<CompletableFuture<Void>> pending = new ArrayList<>();
        for (int b = 0; b < buckets; b++) {
          pending.add(comm.allReduceAsync(grad, b * bucket, bucket, ReduceOp.SUM));
        }
        CompletableFuture<Void> barrier = comm.barrierAsync(CollectiveOptions.DEFAULT);
        double[] d = {comm.rank()};
        comm.allReduce(d, ReduceOp.SUM);
        assertEquals(n * (n - 1) / 2.0, d[0]);
        CompletableFuture.allOf(pending.toArray(new CompletableFuture[0])).get();
        barrier.get();
        for (int i = 0; i < grad.length; i++) {
          float expected = 0;
          for (int r = 0; r < n; r++) {
            expected += input(r, i);
          }
          assertEquals(expected, grad[i], "element " + i);
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldReduceOnlyTheGivenRangeWithOffsetsAndLength() {
    int n = 3;
    LocalGroup group = LocalGroup.create(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        int[] data = new int[100];
        Arrays.fill(data, comm.rank() + 1);
        comm.allReduce(data, 10, 50, ReduceOp.SUM);
        for (int i = 0; i < 100; i++) {
          assertEquals(i >= 10 && i < 60 ? 6 : comm.rank() + 1, data[i], "element " + i);
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldGatherAndBroadcastArbitraryObjectsWithKryo() {
    int n = 5;
    LocalGroup group = smallSegments(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        Map<String, Object> mine = new HashMap<>();
        mine.put("rank", comm.rank());
        mine.put("host", "executor-" + comm.rank());
        mine.put("payload", new double[comm.rank() * 1000]);
        List<Map<String, Object>> all = comm.allGatherObjects(mine);
        assertEquals(n, all.size());
        for (int r = 0; r < n; r++) {
          assertEquals(r, all.get(r).get("rank"));
          assertEquals("executor-" + r, all.get(r).get("host"));
          assertEquals(r * 1000, ((double[]) all.get(r).get("payload")).length);
        }
        Point root = comm.rank() == 2 ? new Point(3, "three") : null;
        Point got = comm.broadcastObject(root, 2);
        assertEquals(new Point(3, "three"), got);
        String big = comm.rank() == 0 ? "x".repeat(100_000) : null;
        assertEquals(100_000, comm.<String>broadcastObject(big, 0).length());
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  /**
   * An object collective past {@code objects.maxBytes} fails on every rank with the same named error, before
   * anything is allocated for the announced lengths (a broken or hostile peer's length is never trusted).
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"allGatherObjects", "broadcastObject"})
  void objectCollectivesPastTheirLimitFailEveryRankByName(String call) {
    LocalGroup group = LocalGroup.create(3, CollectiveConfig.from(Map.of(CollectiveConfig.OBJECT_MAX_BYTES, "4000")),
        UnaryOperator.identity());
    try {
      List<GroupHarness.Outcome<Object>> out = GroupHarness.runAll(group, LIMIT, comm -> {
        String mine = comm.rank() == 1 ? "x".repeat(5000) : "small";
        return call.equals("allGatherObjects") ? comm.allGatherObjects(mine) : comm.broadcastObject(mine, 1);
      });
      for (GroupHarness.Outcome<Object> o : out) {
        assertTrue(o.error instanceof CollectiveException, "rank " + o.rank + ": " + o.error);
        assertTrue(o.error.getMessage().contains("more than objects.maxBytes=4000"), o.error.getMessage());
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  /** No no-argument constructor: Kryo must still rebuild it. */
  static final class Point {
    final int x;
    final String name;

    Point(int x, String name) {
      this.x = x;
      this.name = name;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Point && ((Point) o).x == x && ((Point) o).name.equals(name);
    }

    @Override
    public int hashCode() {
      return x;
    }
  }
}
