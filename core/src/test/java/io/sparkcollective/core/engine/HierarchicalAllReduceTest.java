package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.algorithm.AlgorithmSelector;
import io.sparkcollective.core.algorithm.Placement;
import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveMismatchException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.GroupHarness.Outcome;
import io.sparkcollective.core.testing.NodeMapTransport;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.fault.FaultInjectingTransport;
import io.sparkcollective.core.transport.fault.FaultPolicy;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Ranks that share processes: reduce in the process, all-reduce across processes, share in the process. */
@Timeout(300)
class HierarchicalAllReduceTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);

  private static LocalGroup placed(int[] nodes) {
    return LocalGroup.create(nodes.length,
        CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")), t -> new NodeMapTransport(t, nodes));
  }

  /** Integer-valued, so every order of summation gives the exact same float. */
  private static float value(int rank, int i) {
    return (i * 13 + rank * 7) % 41 - 20;
  }

  static Stream<Arguments> placements() {
    return Stream.of(new int[] {0, 0, 1, 1}, new int[] {0, 1, 1, 2, 2, 2}, new int[] {0, 0, 0, 1},
        new int[] {1, 0, 1, 0, 1}, new int[] {0, 0, 0}, new int[] {0, 1, 2}, new int[] {3, 3, 2, 2, 1, 1, 0, 0, 0},
        new int[] {0, 1, 0, 1}, new int[] {0, 0, 0, 1, 1, 1}, new int[] {2, 2, 0, 0, 1, 1})
        .map(Arguments::of);
  }

  @ParameterizedTest(name = "ranks on processes {0}")
  @MethodSource("placements")
  void shouldMatchTheSequentialReductionOnEveryRankBitForBit(int[] nodes) {
    int n = nodes.length;
    LocalGroup group = placed(nodes);
    try {
      for (Algorithm a : new Algorithm[] {Algorithm.HIERARCHICAL, Algorithm.AUTO}) {
        for (int len : new int[] {0, 1, n + 1, 3001}) {
          for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX, ReduceOp.AVG}) {
            List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
              float[] x = new float[len];
              for (int i = 0; i < len; i++) {
                x[i] = value(comm.rank(), i);
              }
              comm.allReduce(DataBuffer.of(x), op, CollectiveOptions.DEFAULT.withAlgorithm(a));
              return x;
            });
            float[] expected = new float[len];
            for (int i = 0; i < len; i++) {
              float acc = op == ReduceOp.MAX ? Float.NEGATIVE_INFINITY : 0;
              for (int r = 0; r < n; r++) {
                acc = op == ReduceOp.MAX ? Math.max(acc, value(r, i)) : acc + value(r, i);
              }
              expected[i] = op == ReduceOp.AVG ? acc / n : acc;
            }
            for (int r = 0; r < n; r++) {
              assertArrayEquals(expected, out.get(r), a + " " + op + " len " + len + " rank " + r);
            }
          }
        }
      }
      // Integers and doubles too, and bfloat16 on the wire (every rank the same bits).
      List<long[]> ints = GroupHarness.run(group, LIMIT, comm -> {
        long[] x = {Long.MAX_VALUE, comm.rank(), -comm.rank()};
        comm.allReduce(x, ReduceOp.SUM);
        return x;
      });
      long sumRanks = (long) n * (n - 1) / 2;
      for (long[] x : ints) {
        assertArrayEquals(new long[] {Long.MAX_VALUE * n, sumRanks, -sumRanks}, x);
      }
      List<float[]> bf16 = GroupHarness.run(group, LIMIT, comm -> {
        float[] x = new float[2000];
        for (int i = 0; i < x.length; i++) {
          x[i] = (float) Math.sin(i + comm.rank());
        }
        comm.allReduce(DataBuffer.of(x), ReduceOp.SUM, CollectiveOptions.DEFAULT.withWireType(DType.BF16));
        return x;
      });
      for (float[] x : bf16) {
        assertArrayEquals(bf16.get(0), x);
      }
    } finally {
      GroupHarness.closeAll(group);
    }
    assertEquals(0, group.fabric().pool().outstanding(), "frames leaked");
  }

  /**
   * Long vectors: the phases run piece by piece (a piece is one ring pass across processes, 8 segments of 1024
   * floats per process here), with the RING across processes (the threshold lowered to 0). Lengths with
   * several pieces per block, including blocks one element shorter whose last piece is empty (65 537 for two
   * ranks per process on two processes, 98 305 for three), in the sharded form (equal ranks per process) and
   * the leader form (unequal): every rank ends with the sequential sum; with bfloat16 on the wire (whose
   * in-process phases read the F32 values in place too) every rank ends with the same bits.
   */
  @ParameterizedTest(name = "ranks on processes {0}")
  @MethodSource("placements")
  void shouldMatchTheSequentialSumWhenTheRingAcrossProcessesRunsInPasses(int[] nodes) {
    int n = nodes.length;
    LocalGroup group = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096",
        CollectiveConfig.RING_MIN_BYTES, "0")), t -> new NodeMapTransport(t, nodes));
    try {
      for (int len : new int[] {100_003, 65_537, 98_305}) {
        List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
          float[] x = new float[len];
          for (int i = 0; i < len; i++) {
            x[i] = value(comm.rank(), i);
          }
          comm.allReduce(DataBuffer.of(x), ReduceOp.SUM);
          return x;
        });
        float[] expected = new float[len];
        for (int i = 0; i < len; i++) {
          for (int r = 0; r < n; r++) {
            expected[i] += value(r, i);
          }
        }
        for (int r = 0; r < n; r++) {
          assertArrayEquals(expected, out.get(r), "len " + len + " rank " + r);
        }
      }
      List<float[]> bf16 = GroupHarness.run(group, LIMIT, comm -> {
        float[] x = new float[65_537];
        for (int i = 0; i < x.length; i++) {
          x[i] = value(comm.rank(), i);
        }
        comm.allReduce(DataBuffer.of(x), ReduceOp.SUM, CollectiveOptions.DEFAULT.withWireType(DType.BF16));
        return x;
      });
      for (int r = 0; r < n; r++) {
        assertArrayEquals(bf16.get(0), bf16.get(r), "bfloat16 wire: rank " + r + " differs from rank 0");
      }
      for (int i = 0; i < 65_537; i++) {
        float exact = 0;
        for (int r = 0; r < n; r++) {
          exact += value(r, i);
        }
        // Integers below 256 in magnitude, partial sums included, are exact in bfloat16 (8 significant bits).
        assertEquals(exact, bf16.get(0)[i], "bfloat16 wire element " + i);
      }
    } finally {
      GroupHarness.closeAll(group);
    }
    assertEquals(0, group.fabric().pool().outstanding(), "frames leaked");
  }

  /**
   * Ranks of one process read each other's vectors in place; the vectors need not be laid out alike: each
   * rank's range starts at its own offset in a larger array, or lives in a direct or heap little-endian buffer
   * (used in place too), and doubles go the same way. Many segments per block, results equal the sequential
   * reduction on every rank, and a second operation right after the first sees no stale range.
   */
  @ParameterizedTest(name = "ranks on processes {0}")
  @MethodSource("placements")
  void shouldReadRanksOfTheSameProcessInPlaceWhateverTheirLayout(int[] nodes) {
    int n = nodes.length;
    int len = 10_007;
    LocalGroup group = placed(nodes);
    try {
      for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MIN}) {
        List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
          int r = comm.rank();
          float[] result = new float[len];
          for (int round = 0; round < 2; round++) {
            DataBuffer buf;
            float[] backing = null;
            java.nio.ByteBuffer direct = null;
            if (r % 4 >= 2) { // direct and heap little-endian buffers, used in place like arrays
              direct = (r % 4 == 2 ? java.nio.ByteBuffer.allocateDirect(len * 4)
                  : java.nio.ByteBuffer.allocate(len * 4)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
              for (int i = 0; i < len; i++) {
                direct.putFloat(4 * i, value(r + round, i));
              }
              buf = DataBuffer.of(direct, DType.F32);
            } else {
              int offset = 3 * r + 1; // a different layout on every rank
              backing = new float[offset + len + 5];
              for (int i = 0; i < len; i++) {
                backing[offset + i] = value(r + round, i);
              }
              buf = DataBuffer.of(backing, offset, len);
            }
            comm.allReduce(buf, op, CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.HIERARCHICAL));
            for (int i = 0; i < len; i++) {
              result[i] = direct != null ? direct.getFloat(4 * i) : backing[3 * r + 1 + i];
            }
          }
          return result;
        });
        float[] expected = new float[len];
        for (int i = 0; i < len; i++) {
          float acc = op == ReduceOp.MIN ? Float.POSITIVE_INFINITY : 0;
          for (int r = 0; r < n; r++) {
            acc = op == ReduceOp.MIN ? Math.min(acc, value(r + 1, i)) : acc + value(r + 1, i);
          }
          expected[i] = acc;
        }
        for (int r = 0; r < n; r++) {
          assertArrayEquals(expected, out.get(r), op + " rank " + r);
        }
      }
      List<double[]> doubles = GroupHarness.run(group, LIMIT, comm -> {
        double[] x = new double[5000];
        for (int i = 0; i < x.length; i++) {
          x[i] = value(comm.rank(), i);
        }
        comm.allReduce(x, ReduceOp.SUM);
        return x;
      });
      for (double[] x : doubles) {
        for (int i = 0; i < x.length; i++) {
          double acc = 0;
          for (int r = 0; r < n; r++) {
            acc += value(r, i);
          }
          assertEquals(acc, x[i], "element " + i);
        }
      }
    } finally {
      GroupHarness.closeAll(group);
    }
    assertEquals(0, group.fabric().pool().outstanding(), "frames leaked");
  }

  /** A vector read in place is not kept alive by the frames that referred to it once they are back in the pool. */
  @Test
  void shouldNotKeepAVectorAliveAfterItsOperation() throws Exception {
    int[] nodes = {0, 0, 1, 1};
    LocalGroup group = placed(nodes);
    List<java.lang.ref.WeakReference<float[]>> refs = new java.util.concurrent.CopyOnWriteArrayList<>();
    try {
      GroupHarness.run(group, LIMIT, comm -> {
        float[] x = new float[1 << 20];
        refs.add(new java.lang.ref.WeakReference<>(x));
        comm.allReduce(x, ReduceOp.SUM);
        return null;
      });
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (refs.stream().anyMatch(r -> r.get() != null) && System.nanoTime() < deadline) {
        System.gc();
        Thread.sleep(20);
      }
      assertEquals(4, refs.size());
      assertTrue(refs.stream().allMatch(r -> r.get() == null), "a finished operation's vector is still reachable");
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void autoPicksHierarchicalOnlyWhenAProcessHoldsSeveralRanksOfAMultiProcessGroup() {
    AlgorithmSelector s = new AlgorithmSelector(16384, 8, 4 << 20, Algorithm.AUTO);
    Placement twoByTwo = Placement.of(new int[] {0, 0, 1, 1});
    Placement twoByFour = Placement.of(new int[] {0, 0, 0, 0, 1, 1, 1, 1});
    assertEquals(Algorithm.HIERARCHICAL, s.select(Algorithm.AUTO, 1 << 20, twoByTwo).algorithm());
    assertEquals(Algorithm.HALVING_DOUBLING, s.select(Algorithm.AUTO, 1 << 20, twoByTwo).inner(),
        "inner, by 2 processes");
    assertEquals(Algorithm.RING, s.select(Algorithm.AUTO, 64 << 20, twoByFour).inner());
    assertEquals(Algorithm.HALVING_DOUBLING, s.select(Algorithm.AUTO, 6 << 20, twoByTwo).inner(),
        "inner carries half the vector: 3 MiB, below RING's threshold of 4 MiB");
    assertEquals(Algorithm.DIRECT, s.select(Algorithm.AUTO, 4, twoByTwo).inner());
    // Not a power of two: RING above DIRECT's size (HALVING_DOUBLING would fold a rank in with two full-vector
    // transfers), RECURSIVE_DOUBLING below it over sockets, at any group size.
    assertEquals(Algorithm.RING, s.select(Algorithm.AUTO, 1 << 20, Placement.flat(3)).algorithm());
    assertEquals(Algorithm.RING, s.select(Algorithm.AUTO, 65536, Placement.flat(6)).algorithm());
    assertEquals(Algorithm.RECURSIVE_DOUBLING, s.select(Algorithm.AUTO, 16384, Placement.flat(3)).algorithm());
    assertEquals(Algorithm.RECURSIVE_DOUBLING, s.select(Algorithm.AUTO, 16384, Placement.flat(12)).algorithm());
    assertEquals(Algorithm.RING, s.select(Algorithm.AUTO, 1 << 20, Placement.flat(12)).algorithm());
    assertEquals(Algorithm.HALVING_DOUBLING, s.select(Algorithm.AUTO, 1 << 20, Placement.flat(4)).algorithm(),
        "one rank per process");
    assertEquals(Algorithm.HALVING_DOUBLING, s.select(Algorithm.AUTO, 1 << 20, Placement.of(new int[4]))
        .algorithm(), "one process");
    assertEquals(Algorithm.RING, s.select(Algorithm.RING, 1 << 20, twoByTwo).algorithm(), "a forced algorithm wins");
  }

  @ParameterizedTest(name = "ranks on processes {1}, link breaks at step {0}")
  @MethodSource("steps")
  void shouldFailEveryRankFastWhenALinkBreaksInAnyPhase(int step, int[] nodes) {
    FaultPolicy policy = FaultPolicy.breakFirstLinkAtStep(step);
    LocalGroup group = LocalGroup.create(nodes.length, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES,
        "4096")), t -> new NodeMapTransport(new FaultInjectingTransport(t, policy), nodes));
    try {
      List<Outcome<float[]>> outcomes = GroupHarness.runAll(group, LIMIT, comm -> {
        float[] x = new float[20_000];
        Arrays.fill(x, comm.rank() + 1);
        comm.allReduce(DataBuffer.of(x), ReduceOp.SUM, CollectiveOptions.DEFAULT.withTimeout(Duration.ofSeconds(30))
            .withAlgorithm(Algorithm.HIERARCHICAL));
        return x;
      });
      int failed = 0;
      for (Outcome<float[]> o : outcomes) {
        assertTrue(o.elapsedMs < 2000, o + " took too long");
        if (o.error != null) {
          assertInstanceOf(CollectiveException.class, o.error, o.toString());
          failed++;
        } else {
          float[] expected = new float[20_000];
          Arrays.fill(expected, nodes.length * (nodes.length + 1) / 2f);
          assertArrayEquals(expected, o.value, "a rank that returns has the right sum: " + o);
        }
      }
      assertTrue(failed >= 2, "both ends of the broken link fail: " + outcomes);
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  static Stream<Arguments> steps() {
    // Phase 1 (0), the ring across three processes (1 to 4), phase 3; uneven (leaders) and even (shards).
    return Stream.of(new int[] {0, 0, 1, 1, 2}, new int[] {0, 0, 1, 1, 2, 2})
        .flatMap(nodes -> Stream.of(0, 1, 2, 3, 4, 1 << 24).map(step -> Arguments.of(step, nodes)));
  }

  @Test
  void shouldRunOverTcpWithTwoRanksPerEndpointAndNameTheAlgorithmWhenRanksDisagree() throws Exception {
    // Two connections per pair of endpoints: the two ranks of an endpoint send over one each.
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.CHECKSUM, "true",
        CollectiveConfig.CHANNELS, "2"));
    try (TcpCluster cluster = new TcpCluster(2, config)) {
      List<Communicator> group = cluster.group("hier", new int[] {0, 0, 1, 1});
      try {
        for (int len : new int[] {3, 100_003, 1 << 20}) {
          List<float[]> out = GroupHarness.run(group, LIMIT, comm -> {
            float[] x = new float[len];
            for (int i = 0; i < len; i++) {
              x[i] = value(comm.rank(), i);
            }
            comm.allReduce(x, ReduceOp.SUM);
            return x;
          });
          for (int i = 0; i < len; i += 997) {
            float exact = value(0, i) + value(1, i) + value(2, i) + value(3, i);
            for (float[] x : out) {
              assertEquals(exact, x[i], "element " + i);
            }
          }
        }
        // Each endpoint dialled the other twice and was dialled twice.
        assertEquals(4, cluster.endpoint(0).openConnections());
        assertEquals(4, cluster.endpoint(1).openConnections());
        List<Outcome<Void>> bad = GroupHarness.runAll(group, LIMIT, comm -> {
          comm.allReduce(new float[comm.rank() == 3 ? 11 : 10], ReduceOp.SUM);
          return null;
        });
        int mismatches = 0;
        for (Outcome<Void> o : bad) {
          // Ranks that saw the other call throw the mismatch; the rest hear of it through the ABORT.
          assertInstanceOf(CollectiveException.class, o.error, o.toString());
          mismatches += o.error instanceof CollectiveMismatchException ? 1 : 0;
          assertTrue(o.error.getMessage().contains("HIERARCHICAL(DIRECT)"), o.error.getMessage());
          assertTrue(o.error.getMessage().contains("count=10") && o.error.getMessage().contains("count=11"),
              o.error.getMessage());
        }
        assertTrue(mismatches >= 1, bad.toString());
      } finally {
        GroupHarness.closeAll(group);
      }
    }
  }
}
