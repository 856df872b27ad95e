package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveMismatchException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.GroupHarness.Outcome;
import io.sparkcollective.core.transport.fault.FaultInjectingTransport;
import io.sparkcollective.core.transport.fault.FaultPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Faults injected into the in-JVM transport: every rank's call must fail with the library's exception,
 * fast (well before the operation timeout), and the group must stay failed.
 */
@Timeout(300)
class FailureSemanticsTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);
  /** Generous operation timeout: failures must surface through ABORT, long before it. */
  private static final CollectiveOptions LONG_TIMEOUT = CollectiveOptions.DEFAULT.withTimeout(Duration.ofSeconds(30));
  private static final long FAST_MS = 2000;

  private static LocalGroup faulty(int n, FaultPolicy policy) {
    return LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")),
        t -> new FaultInjectingTransport(t, policy));
  }

  private static int steps(Algorithm a, int n) {
    switch (a) {
      case RING:
        return 2 * (n - 1);
      case DIRECT:
        return 1;
      default:
        return 2 * Integer.numberOfTrailingZeros(Integer.highestOneBit(n)) + 2;
    }
  }

  static Stream<Arguments> everyStep() {
    List<Arguments> cases = new ArrayList<>();
    for (Algorithm a : new Algorithm[] {Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING}) {
      for (int n : new int[] {2, 4, 5}) {
        for (int step = 0; step < steps(a, n); step++) {
          if (a == Algorithm.HALVING_DOUBLING && Integer.bitCount(n) == 1 && (step == 0 || step == steps(a, n) - 1)) {
            continue; // fold and unfold steps exist only when n is not a power of two
          }
          cases.add(Arguments.of(a, n, step));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0} on {1} ranks, link breaks at step {2}")
  @MethodSource("everyStep")
  void shouldFailAllRanksFastWhenALinkBreaksAtAnyStep(Algorithm algorithm, int n, int step) {
    LocalGroup group = faulty(n, FaultPolicy.breakFirstLinkAtStep(step));
    try {
      List<Outcome<float[]>> outcomes = GroupHarness.runAll(group, LIMIT, comm -> {
        float[] data = new float[50_000];
        Arrays.fill(data, comm.rank() + 1);
        comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, LONG_TIMEOUT.withAlgorithm(algorithm));
        return data;
      });
      int lostPeer = 0;
      float[] expected = new float[50_000];
      Arrays.fill(expected, n * (n + 1) / 2f);
      for (Outcome<float[]> o : outcomes) {
        assertTrue(o.elapsedMs < FAST_MS, o + " took too long");
        if (o.error == null) {
          // Only a rank whose part was over when the link broke may return, and then with the right result.
          assertArrayEquals(expected, o.value, o.toString());
        } else {
          assertInstanceOf(CollectiveException.class, o.error, o.toString());
          lostPeer += o.error instanceof PeerLostException ? 1 : 0;
        }
      }
      // An end of the link reports the lost peer; the other may hear of it first through a relayed ABORT.
      assertTrue(lostPeer >= 1, "an end of the link reports the lost peer: " + outcomes);
      for (Outcome<float[]> o : outcomes) {
        if (o.error != null) {
          assertTrue(o.error.getMessage().contains("link"), "names the broken link: " + o);
        }
      }
      // The group stays failed, at once.
      for (Communicator c : group.communicators()) {
        long t0 = System.nanoTime();
        assertThrows(CollectiveException.class, () -> c.allReduce(new float[1], ReduceOp.SUM));
        assertThrows(CollectiveException.class, c::checkHealth);
        assertTrue(System.nanoTime() - t0 < 100_000_000L);
      }
    } finally {
      GroupHarness.closeAll(group);
    }
    assertEquals(0, group.fabric().pool().outstanding(), "frames leaked");
  }

  @Test
  void shouldTimeOutTheWaiterAndFailTheGroupWhenAFrameIsDropped() {
    int n = 4;
    // Chunks of one segment, dropped at the last ring step: nothing else comes, the receiver times out.
    LocalGroup group = faulty(n, FaultPolicy.dropFirstAtStep(2 * (n - 1) - 1));
    CollectiveOptions options = CollectiveOptions.DEFAULT.withTimeout(Duration.ofMillis(500))
        .withAlgorithm(Algorithm.RING);
    try {
      List<Outcome<float[]>> outcomes = GroupHarness.runAll(group, LIMIT, comm -> {
        float[] data = new float[1000];
        Arrays.fill(data, 1);
        comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, options);
        return data;
      });
      int timeouts = 0;
      float[] expected = new float[1000];
      Arrays.fill(expected, n);
      for (Outcome<float[]> o : outcomes) {
        assertTrue(o.elapsedMs < 500 + FAST_MS, o + " took too long");
        if (o.error == null) {
          // A rank that had everything before the drop completes, correctly; the group fails under it.
          assertArrayEquals(expected, o.value, o.toString());
          assertThrows(CollectiveException.class, group.communicator(o.rank)::barrier);
        } else if (o.error instanceof CollectiveTimeoutException) {
          timeouts++;
          assertTrue(o.error.getMessage().contains("timed out after 500 ms"), o.error.getMessage());
        } else {
          assertInstanceOf(CollectiveException.class, o.error, o.toString());
        }
      }
      assertEquals(1, timeouts, "the rank missing the frame times out: " + outcomes);
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  /**
   * A rank that never calls: everyone fails at the timeout. With a small message (direct algorithm) every
   * rank waits on the absent rank itself and names it; with a large one ranks may name the neighbour they
   * wait on, which is itself stuck, so only the bound is asserted there.
   */
  @ParameterizedTest(name = "{0} floats")
  @ValueSource(ints = {100, 100_000})
  void shouldFailEveryoneAtTheTimeoutWhenARankNeverArrives(int length) {
    int n = 4;
    LocalGroup group = LocalGroup.create(n);
    CollectiveOptions options = CollectiveOptions.DEFAULT.withTimeout(Duration.ofMillis(400));
    try {
      List<Outcome<Object>> outcomes = GroupHarness.runAll(group, LIMIT, comm -> {
        if (comm.rank() == 3) {
          return "stayed away";
        }
        comm.allReduce(DataBuffer.of(new float[length]), ReduceOp.SUM, options);
        return null;
      });
      for (Outcome<Object> o : outcomes.subList(0, 3)) {
        assertInstanceOf(CollectiveException.class, o.error, o.toString());
        assertTrue(o.elapsedMs >= 350 && o.elapsedMs < 400 + FAST_MS, o + " not at the timeout");
        if (length == 100) {
          assertTrue(o.error.getMessage().contains("waiting for rank 3"), "names the absent rank: " + o);
        }
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldStillProduceCorrectResultsWhenFramesAreDelayed() {
    int n = 5;
    LocalGroup group = faulty(n, FaultPolicy.seeded(42, 0.0, 0.3, 3));
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        for (Algorithm a : new Algorithm[] {Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING}) {
          float[] data = new float[3000];
          for (int i = 0; i < data.length; i++) {
            data[i] = i + comm.rank();
          }
          comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(a));
          float[] expected = new float[3000];
          for (int i = 0; i < data.length; i++) {
            expected[i] = n * i + n * (n - 1) / 2f;
          }
          assertArrayEquals(expected, data, a.toString());
        }
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldNoticeALinkLostWhileIdleAtTheNextCallAndInHealthCheck() throws Exception {
    int n = 3;
    LocalGroup group = LocalGroup.create(n);
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        comm.allReduce(new float[10], ReduceOp.SUM);
        return null;
      });
      ((EngineCommunicator) group.communicator(0)).transport().disconnect(1, "cable pulled");
      for (Communicator c : group.communicators()) {
        CollectiveException e = assertThrows(CollectiveException.class, c::checkHealth);
        assertTrue(e.getMessage().contains("rank 1") || e.getMessage().contains("rank 0"), e.getMessage());
        long t0 = System.nanoTime();
        CollectiveException again = assertThrows(CollectiveException.class, () -> c.barrier());
        assertSame(e, again, "later calls throw the group's first failure");
        assertTrue(System.nanoTime() - t0 < 100_000_000L);
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldFailPeersFastWhenOneRankClosesMidOperation() {
    int n = 4;
    LocalGroup group = LocalGroup.create(n);
    try {
      List<Outcome<Object>> outcomes = GroupHarness.runAll(group, LIMIT, comm -> {
        if (comm.rank() == 2) {
          Thread.sleep(100);
          comm.close();
          return "closed";
        }
        comm.allReduce(DataBuffer.of(new float[10_000]), ReduceOp.SUM, LONG_TIMEOUT);
        return null;
      });
      for (Outcome<Object> o : outcomes) {
        if (o.rank != 2) {
          assertInstanceOf(CollectiveException.class, o.error, o.toString());
          assertTrue(o.elapsedMs < 100 + FAST_MS, o + " took too long");
        }
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  // ---------------------------------------------------------------- ranks that disagree

  interface Call {
    void run(Communicator comm);
  }

  static Stream<Arguments> disagreements() {
    return Stream.of(
        Arguments.of("the length", (Call) c -> c.allReduce(new float[c.rank() == 2 ? 11 : 10], ReduceOp.SUM)),
        Arguments.of("the element type", (Call) c -> {
          if (c.rank() == 1) {
            c.allReduce(new int[10], ReduceOp.SUM);
          } else {
            c.allReduce(new float[10], ReduceOp.SUM);
          }
        }),
        Arguments.of("the reduction",
            (Call) c -> c.allReduce(new float[10], c.rank() == 0 ? ReduceOp.MAX : ReduceOp.SUM)),
        Arguments.of("the operation", (Call) c -> {
          if (c.rank() == 1) {
            c.broadcast(new float[10], 0);
          } else {
            c.allReduce(new float[10], ReduceOp.SUM);
          }
        }),
        Arguments.of("the algorithm", (Call) c -> c.allReduce(DataBuffer.of(new float[10]), ReduceOp.SUM,
            CollectiveOptions.DEFAULT.withAlgorithm(c.rank() == 3 ? Algorithm.RING : Algorithm.DIRECT))),
        Arguments.of("the root", (Call) c -> c.broadcast(new float[10], c.rank() == 2 ? 1 : 0)),
        Arguments.of("the root", (Call) c -> c.broadcast(new float[100_000], c.rank() == 3 ? 1 : 0)));
  }

  @ParameterizedTest(name = "ranks disagree on {0}")
  @MethodSource("disagreements")
  void shouldFailAllRanksNamingBothSidesWhenRanksDisagree(String what, Call call) {
    int n = 4;
    LocalGroup group = LocalGroup.create(n);
    try {
      List<Outcome<Object>> outcomes = GroupHarness.runAll(group, LIMIT, comm -> {
        call.run(comm);
        return null;
      });
      boolean named = false;
      for (Outcome<Object> o : outcomes) {
        if (o.error == null) {
          // A rank whose part was complete before anyone noticed (e.g. a broadcast receiver that got its
          // data from the real root) returns; the group is failed for its next call.
          assertThrows(CollectiveException.class, group.communicator(o.rank)::barrier);
          continue;
        }
        assertInstanceOf(CollectiveException.class, o.error, o.toString());
        assertTrue(o.elapsedMs < FAST_MS, o + " took too long");
        String m = o.error.getMessage();
        if (o.error instanceof CollectiveMismatchException) {
          assertTrue(m.contains(what), m);
          named = true;
        } else {
          assertTrue(m.contains("ranks disagree on " + what), "the abort carries the mismatch: " + m);
        }
      }
      assertTrue(named, "one rank detects the mismatch: " + outcomes);
    } finally {
      GroupHarness.closeAll(group);
    }
  }
}
