package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.testing.GroupHarness;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Two communicators driven at once from different threads, and concurrent tags on one communicator. */
@Timeout(120)
class ConcurrencyTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);

  private static void checkSum(Communicator comm, int iteration, int n, int salt, CollectiveOptions options) {
    float[] data = new float[10_000 + iteration];
    for (int i = 0; i < data.length; i++) {
      data[i] = comm.rank() + salt + i % 7;
    }
    comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, options);
    for (int i = 0; i < data.length; i++) {
      float expected = n * (n - 1) / 2f + n * (salt + i % 7);
      if (data[i] != expected) {
        throw new AssertionError("rank " + comm.rank() + " salt " + salt + " iteration " + iteration + " element "
            + i + ": " + data[i] + " != " + expected);
      }
    }
  }

  @Test
  void shouldRunTwoGroupsConcurrentlyFromDifferentThreads() throws Exception {
    LocalGroup a = LocalGroup.create(4);
    LocalGroup b = LocalGroup.create(3);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<?> fa = pool.submit(() -> GroupHarness.run(a, LIMIT, comm -> {
        for (int it = 0; it < 200; it++) {
          checkSum(comm, it, 4, 1, CollectiveOptions.DEFAULT);
        }
        return null;
      }));
      Future<?> fb = pool.submit(() -> GroupHarness.run(b, LIMIT, comm -> {
        for (int it = 0; it < 200; it++) {
          checkSum(comm, it, 3, 100, CollectiveOptions.DEFAULT);
        }
        return null;
      }));
      fa.get();
      fb.get();
    } finally {
      pool.shutdownNow();
      GroupHarness.closeAll(a);
      GroupHarness.closeAll(b);
    }
    assertEquals(0, a.fabric().pool().outstanding());
    assertEquals(0, b.fabric().pool().outstanding());
  }

  @Test
  void shouldKeepTagsIndependentWhenTwoThreadsPerRankShareACommunicator() {
    int n = 4;
    LocalGroup group = LocalGroup.create(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        Thread second = new Thread(() -> {
          for (int it = 0; it < 100; it++) {
            checkSum(comm, it, n, 50, CollectiveOptions.DEFAULT.withTag(7));
          }
        }, "rank-" + comm.rank() + "-tag7");
        Throwable[] failure = new Throwable[1];
        second.setUncaughtExceptionHandler((t, e) -> failure[0] = e);
        second.start();
        for (int it = 0; it < 100; it++) {
          checkSum(comm, it, n, 0, CollectiveOptions.DEFAULT);
        }
        second.join();
        if (failure[0] != null) {
          throw new AssertionError("tag 7 thread failed", failure[0]);
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }
}
