package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.testing.GroupHarness;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Steady-state operations allocate nothing proportional to message size; nothing leaks across groups. */
@Timeout(300)
class ResourceTest {

  /** Bytes the calling thread allocated per all-reduce, measured after warm-up. */
  private static long[] allocationPerOp(int floats, Algorithm algorithm) {
    int n = 4;
    LocalGroup group = LocalGroup.create(n);
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    try {
      List<Long> perRank = GroupHarness.run(group, Duration.ofSeconds(120), comm -> {
        float[] data = new float[floats];
        CollectiveOptions options = CollectiveOptions.DEFAULT.withAlgorithm(algorithm);
        for (int i = 0; i < 30; i++) {
          comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, options);
        }
        int ops = 20;
        long before = mx.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < ops; i++) {
          comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, options);
        }
        return (mx.getCurrentThreadAllocatedBytes() - before) / ops;
      });
      return perRank.stream().mapToLong(Long::longValue).toArray();
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldAllocateTheSameSmallAmountPerAllReduceWhateverTheMessageSize() {
    for (Algorithm a : new Algorithm[] {Algorithm.RING, Algorithm.HALVING_DOUBLING, Algorithm.DIRECT}) {
      long[] small = allocationPerOp(16 * 1024, a);
      long[] large = allocationPerOp(1 << 20, a);
      System.out.printf("%s bytes allocated per all-reduce by each rank's thread: 64 KiB %s, 4 MiB %s%n", a,
          java.util.Arrays.toString(small), java.util.Arrays.toString(large));
      for (int r = 0; r < small.length; r++) {
        // 4 MiB messages: a copy would show as >= 4 MiB per op; the per-op objects are a few hundred bytes.
        assertTrue(large[r] < 16 * 1024, a + " rank " + r + " allocates " + large[r] + " B per 4 MiB all-reduce");
        assertTrue(large[r] <= small[r] + 4096,
            a + " rank " + r + ": " + large[r] + " B per 4 MiB op vs " + small[r] + " B per 64 KiB op");
      }
    }
  }

  @Test
  void shouldLeakNoThreadsOrFramesAcrossThousandsOfOperationsAndHundredsOfGroups() {
    int threadsBefore = Thread.activeCount();
    for (int g = 0; g < 200; g++) {
      LocalGroup group = LocalGroup.create(3);
      try {
        GroupHarness.run(group, Duration.ofSeconds(30), comm -> {
          float[] data = new float[1000];
          for (int i = 0; i < 10; i++) {
            comm.allReduce(data, ReduceOp.SUM);
          }
          comm.allReduceAsync(data, ReduceOp.SUM).get();
          comm.barrier();
          return null;
        });
      } finally {
        GroupHarness.closeAll(group);
      }
      assertEquals(0, group.fabric().pool().outstanding(), "frames outstanding after group " + g);
    }
    // Rank threads of the harness and async threads must all be gone.
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (Thread.activeCount() > threadsBefore + 2 && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertTrue(Thread.activeCount() <= threadsBefore + 2,
        "threads grew from " + threadsBefore + " to " + Thread.activeCount());
  }
}
