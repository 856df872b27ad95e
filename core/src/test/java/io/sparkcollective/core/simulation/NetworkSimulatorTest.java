package io.sparkcollective.core.simulation;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.algorithm.AlgorithmChoice;
import io.sparkcollective.core.algorithm.AlgorithmSelector;
import io.sparkcollective.core.algorithm.AllReduceAlgorithm;
import io.sparkcollective.core.algorithm.DirectAllReduce;
import io.sparkcollective.core.algorithm.HalvingDoublingAllReduce;
import io.sparkcollective.core.algorithm.Placement;
import io.sparkcollective.core.algorithm.RingAllReduce;
import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.LocalGroup;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.NodeMapTransport;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The simulator counts right: bytes and steps against what each algorithm states, values against the in-JVM
 * transport bit for bit, and times against closed forms of the model on schedules simple enough to work out.
 */
@Timeout(120)
class NetworkSimulatorTest {
  private static final int SEGMENT_BYTES = 4096;
  private static final int SEGMENT = SEGMENT_BYTES / Float.BYTES;
  /** A network and no CPU: every time below is link time and latency. */
  private static final double GBIT = 1e9 / 8;
  private static final double ALPHA = 5e-6;

  private static NetworkModel linksOnly() {
    return NetworkModel.of(1, ALPHA * 1e6).cpu(0, 1e30, 1e30).local(0, 64);
  }

  private static AllReduceAlgorithm flat(Algorithm a) {
    return AlgorithmSelector.implementation(a);
  }

  @ParameterizedTest(name = "{0} on {1} ranks, {2} elements")
  @CsvSource({"RING, 2, 4096", "RING, 3, 3000", "RING, 5, 100000", "RING, 16, 160000", "RING, 64, 64",
      "HALVING_DOUBLING, 2, 1000", "HALVING_DOUBLING, 4, 4096", "HALVING_DOUBLING, 16, 65536",
      "HALVING_DOUBLING, 256, 1048576"})
  void shouldSendTwoNMinusOneOverNOfTheVectorFromEveryRank(Algorithm a, int n, int len) {
    SimulationResult r = NetworkSimulator.run(flat(a), n, len, Float.BYTES, SEGMENT, linksOnly());
    long expected = 2L * (n - 1) * len * Float.BYTES / n;
    for (int rank = 0; rank < n; rank++) {
      assertEquals(expected, r.networkBytes(rank), a + " rank " + rank);
      assertEquals(0, r.localBytes(rank));
    }
  }

  /**
   * Recursive doubling sends the whole vector at each of its log2 P steps; on a group that is not a power of two
   * the folded-in ranks send it once (and get it back) and their partners send it once more, back.
   */
  @ParameterizedTest(name = "RECURSIVE_DOUBLING on {0} ranks, {1} elements")
  @CsvSource({"2, 1000", "4, 4096", "8, 3001", "16, 100000", "6, 5000", "7, 77"})
  void shouldSendTheWholeVectorAtEveryDoublingStep(int n, int len) {
    SimulationResult r = NetworkSimulator.run(flat(Algorithm.RECURSIVE_DOUBLING), n, len, Float.BYTES, SEGMENT,
        linksOnly());
    int p = Integer.highestOneBit(n);
    int extra = n - p;
    long vector = (long) len * Float.BYTES;
    long levels = Integer.numberOfTrailingZeros(p);
    for (int rank = 0; rank < n; rank++) {
      boolean foldedIn = rank < 2 * extra && rank % 2 == 0;
      boolean unfolds = rank < 2 * extra && rank % 2 == 1;
      long expected = foldedIn ? vector : (levels + (unfolds ? 1 : 0)) * vector;
      assertEquals(expected, r.networkBytes(rank), "rank " + rank);
    }
  }

  @Test
  void shouldSendTwoNMinusOneTimesTheVectorInAllWhenChunksAreUneven() {
    int n = 7;
    int len = 10_001;
    SimulationResult r = NetworkSimulator.run(RingAllReduce.INSTANCE, n, len, Float.BYTES, SEGMENT, linksOnly());
    long total = 0;
    for (int rank = 0; rank < n; rank++) {
      total += r.networkBytes(rank);
    }
    assertEquals(2L * (n - 1) * len * Float.BYTES, total);
  }

  /** Steps used against the count each algorithm states (halving-doubling on a power of two has no unfold step). */
  @ParameterizedTest(name = "{0} on {1} ranks, {2} elements")
  @CsvSource({"RING, 4, 1000, 0", "RING, 3, 200000, 0", "RING, 8, 1000000, 0", "HALVING_DOUBLING, 8, 5000, 1",
      "HALVING_DOUBLING, 6, 5000, 0", "DIRECT, 5, 3000, 0", "DIRECT, 2, 1, 0", "RECURSIVE_DOUBLING, 8, 5000, 1",
      "RECURSIVE_DOUBLING, 6, 5000, 0", "RECURSIVE_DOUBLING, 2, 1, 1"})
  void shouldUseTheStepsEachAlgorithmStates(Algorithm a, int n, int len, int unused) {
    AllReduceAlgorithm alg = flat(a);
    SimulationResult r = NetworkSimulator.run(alg, n, len, Float.BYTES, SEGMENT, linksOnly());
    assertEquals(alg.steps(n, len, SEGMENT) - unused, r.steps(), a + " on " + n + " ranks");
  }

  /** Gaussian values of very different magnitudes: a different order of summing gives different bits. */
  private static float[][] randomVectors(int n, int len, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    float[][] v = new float[n][len];
    for (int r = 0; r < n; r++) {
      for (int i = 0; i < len; i++) {
        v[r][i] = (float) ((random.nextDouble() - 0.5) * Math.pow(10, random.nextInt(8)));
      }
    }
    return v;
  }

  private static float[][] copy(float[][] v) {
    float[][] c = new float[v.length][];
    for (int r = 0; r < v.length; r++) {
      c[r] = v[r].clone();
    }
    return c;
  }

  /** What the engine computes over the in-JVM transport, each rank placed on {@code nodes[rank]}. */
  private static List<float[]> inJvm(float[][] input, int[] nodes, Algorithm a, ReduceOp op) {
    LocalGroup group = LocalGroup.create(input.length,
        CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, String.valueOf(SEGMENT_BYTES))),
        t -> new NodeMapTransport(t, nodes));
    try {
      return GroupHarness.run(group, Duration.ofSeconds(60), comm -> {
        float[] x = input[comm.rank()].clone();
        comm.allReduce(DataBuffer.of(x), op, CollectiveOptions.DEFAULT.withAlgorithm(a));
        return x;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @ParameterizedTest(name = "{0} on {1} ranks, {2} per host, {3} elements, {4}")
  @CsvSource({"RING, 2, 1, 5000, SUM", "RING, 5, 1, 30011, SUM", "RING, 7, 1, 3, MAX",
      "HALVING_DOUBLING, 4, 1, 9000, SUM", "HALVING_DOUBLING, 7, 1, 9001, SUM", "DIRECT, 3, 1, 2500, SUM",
      "DIRECT, 6, 1, 700, PROD", "RECURSIVE_DOUBLING, 8, 1, 9000, SUM", "RECURSIVE_DOUBLING, 7, 1, 3001, SUM",
      "RECURSIVE_DOUBLING, 5, 1, 100, MAX",
      "HIERARCHICAL, 4, 2, 9000, SUM", "HIERARCHICAL, 9, 3, 70001, SUM", "HIERARCHICAL, 8, 4, 100, SUM",
      "RING_2D, 6, 1, 30011, SUM", "RING_2D, 12, 1, 5000, SUM", "RING_2D, 9, 3, 1001, SUM"})
  void shouldLeaveTheSameBitsAsTheInJvmTransport(Algorithm a, int n, int perHost, int len, ReduceOp op) {
    float[][] input = randomVectors(n, len, 42L * n + len);
    int[] nodes = new int[n];
    for (int r = 0; r < n; r++) {
      nodes[r] = r / perHost;
    }
    Placement placement = Placement.of(nodes);
    CollectiveConfig config = CollectiveConfig.defaults();
    AlgorithmChoice choice = new AlgorithmSelector(config.directMaxBytes(), config.directMaxRanks(),
        config.ringMinBytes(), Algorithm.AUTO).select(a, (long) len * Float.BYTES, placement);
    float[][] simulated = copy(input);
    NetworkSimulator.run(AlgorithmSelector.implementation(choice, placement), simulated, SEGMENT,
        linksOnly().ranksPerHost(perHost), op);
    List<float[]> real = inJvm(input, nodes, a, op);
    for (int r = 0; r < n; r++) {
      assertArrayEquals(real.get(r), simulated[r], a + " rank " + r);
    }
    if (op == ReduceOp.SUM && n > 2 && len > 100) {
      // The comparison can tell orders of summation apart: summing rank by rank gives other bits somewhere.
      boolean differs = false;
      for (int i = 0; i < len && !differs; i++) {
        float acc = 0;
        for (int r = 0; r < n; r++) {
          acc += input[r][i];
        }
        differs = Float.floatToIntBits(acc) != Float.floatToIntBits(simulated[0][i]);
      }
      assertTrue(differs || a == Algorithm.DIRECT, "the inputs do not tell summation orders apart");
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @CsvSource({"2", "3", "8", "33"})
  void shouldTakeTwoNMinusOneMessageTimesForARingOfOneSegmentPerChunk(int n) {
    int len = n * 1000; // 4000-byte chunks, one segment each
    SimulationResult r = NetworkSimulator.run(RingAllReduce.INSTANCE, n, len, Float.BYTES, SEGMENT, linksOnly());
    double message = (4000 + 64) / GBIT + ALPHA;
    assertEquals(2 * (n - 1) * message, r.seconds(), 1e-12);
  }

  @Test
  void shouldQueueEveryRanksCopiesOnItsLinkWithDirect() {
    int n = 5;
    int len = 1000; // one segment
    SimulationResult r = NetworkSimulator.run(DirectAllReduce.INSTANCE, n, len, Float.BYTES, SEGMENT, linksOnly());
    // Each egress sends N-1 messages back to back; each ingress receives N-1 from different hosts.
    assertEquals((n - 1) * (4000 + 64) / GBIT + ALPHA, r.seconds(), 1e-12);
  }

  @Test
  void shouldShareAHostsLinkBetweenItsRanks() {
    int len = 1000;
    SimulationResult r = NetworkSimulator.run(DirectAllReduce.INSTANCE, 4, len, Float.BYTES, SEGMENT,
        linksOnly().ranksPerHost(2));
    // Two ranks per host, each with two peers on the other host: four messages through each egress.
    assertEquals(4 * (4000 + 64) / GBIT + ALPHA, r.seconds(), 1e-12);
    assertEquals(4000, r.localBytes(0));
    assertEquals(8000, r.networkBytes(0));
  }

  @Test
  void shouldSlowEveryoneDownToTheSlowHostsLink() {
    SimulationResult r = NetworkSimulator.run(DirectAllReduce.INSTANCE, 2, 1000, Float.BYTES, SEGMENT,
        linksOnly().slowHost(1, 0.1));
    assertEquals((4000 + 64) / (0.1 * GBIT) + ALPHA, r.seconds(), 1e-12);
  }

  @Test
  void shouldLetABurstThroughAtThePeakRateAfterTheLinkWasIdle() {
    // 4064 bytes on the wire, a bucket of 6000 at 10x the rate: the first message passes fast, the second has
    // only what is left (1936 bytes fast, 2128 at the rate) as the tokens refill at the rate.
    NetworkModel m = linksOnly().burst(6000, 10);
    SimulationResult one = NetworkSimulator.run(DirectAllReduce.INSTANCE, 2, 1000, Float.BYTES, SEGMENT, m);
    assertEquals(4064 / (10 * GBIT) + ALPHA, one.seconds(), 1e-12);
    SimulationResult two = NetworkSimulator.run(DirectAllReduce.INSTANCE, 2, 2000, Float.BYTES, 1000, m);
    double first = 4064 / (10 * GBIT);
    double left = 6000 - 4064 + 4064 / 10.0;
    double second = left / (10 * GBIT) + (4064 - left) / GBIT;
    assertEquals(first + second + ALPHA, two.seconds(), 1e-12);
  }

  @Test
  void shouldMakeRanksWaitForACoreOnAMachineWithFewerCoresThanRanks() {
    // CPU only (a link of 10 Tbit/s, no latency): 1000-byte chunks at 1 GB/s are 1 us of copying or reducing.
    NetworkModel cpu = NetworkModel.of(10_000, 0).cpu(0, 1e9, 1e9).local(0, 0);
    int n = 4;
    SimulationResult own = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 4000, Float.BYTES, SEGMENT, cpu);
    SimulationResult asMany = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 4000, Float.BYTES, SEGMENT,
        cpu.machineCores(n));
    SimulationResult one = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 4000, Float.BYTES, SEGMENT,
        cpu.machineCores(1));
    assertEquals(own.seconds(), asMany.seconds(), 1e-12, "a core per rank");
    // On one core every rank's work runs one after another: 2(N-1) sends and receives of 1000-byte chunks each.
    double work = n * 2 * (n - 1) * 2 * (1000 / 1e9);
    assertTrue(one.seconds() >= work - 1e-12, one.seconds() + " < " + work);
    assertTrue(one.seconds() > 1.5 * own.seconds(), "one core: " + one.seconds() + ", own cores: " + own.seconds());
  }

  @Test
  void shouldChargeAContextSwitchOnlyToRanksThatResumeOnACoreAnotherRankUsed() {
    // CPU only: 1 us per message, 4-byte vectors (no bytes to speak of).
    NetworkModel cpu = NetworkModel.of(10_000, 0).cpu(1e-6, 1e9, 1e9).local(0, 0);
    double switchCost = 5e-6;
    int n = 4;
    double own = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 1, Float.BYTES, SEGMENT, cpu).seconds();
    // As many cores as ranks: each rank keeps the core it ran on, however dear a switch would be.
    double kept = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 1, Float.BYTES, SEGMENT,
        cpu.machineCores(n, 1.0)).seconds();
    assertEquals(own, kept, 1e-12, "a core per rank");
    // Two cores for four ranks: every step some rank resumes where another ran. Each of the ring's 2(N-1) steps
    // is a send and a receive per rank, so the switches add at least one per step to the time and at most one
    // per piece of work (4 ranks x 2(N-1) steps x 2).
    double shared = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 1, Float.BYTES, SEGMENT,
        cpu.machineCores(2)).seconds();
    double switching = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 1, Float.BYTES, SEGMENT,
        cpu.machineCores(2, switchCost)).seconds();
    int steps = 2 * (n - 1);
    assertTrue(switching >= shared + steps * switchCost - 1e-12, switching + " vs " + shared);
    assertTrue(switching <= shared + n * steps * 2 * switchCost + 1e-12, switching + " vs " + shared);
    assertThrows(IllegalArgumentException.class, () -> cpu.machineCores(2, -1e-6));
  }

  @Test
  void shouldSlowTheBytesOfRanksThatWaitedForACoreOnly() {
    // CPU only: 1 us per message, 1 GB/s for the bytes.
    NetworkModel cpu = NetworkModel.of(10_000, 0).cpu(1e-6, 1e9, 1e9).local(0, 0);
    int n = 4;
    int len = 1 << 16;
    // A core per rank: nobody waits for one, so the crowded share never applies.
    double own = NetworkSimulator.run(RingAllReduce.INSTANCE, n, len, Float.BYTES, SEGMENT, cpu.machineCores(n))
        .seconds();
    double ownCrowded = NetworkSimulator.run(RingAllReduce.INSTANCE, n, len, Float.BYTES, SEGMENT,
        cpu.machineCores(n).crowded(0.5)).seconds();
    assertEquals(own, ownCrowded, 1e-12, "a core per rank");
    // Two cores for four ranks copying at once: ranks wait for a core, and then move their bytes at half the rate;
    // every byte at half the rate is the most it can cost.
    double shared = NetworkSimulator.run(RingAllReduce.INSTANCE, n, len, Float.BYTES, SEGMENT, cpu.machineCores(2))
        .seconds();
    double crowded = NetworkSimulator.run(RingAllReduce.INSTANCE, n, len, Float.BYTES, SEGMENT,
        cpu.machineCores(2).crowded(0.5)).seconds();
    assertTrue(crowded > 1.2 * shared, crowded + " vs " + shared);
    assertTrue(crowded < 2 * shared, crowded + " vs " + shared);
    // The per-message CPU is not slowed: with one element per rank the bytes are next to nothing.
    double tiny = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 1, Float.BYTES, SEGMENT, cpu.machineCores(2))
        .seconds();
    double tinyCrowded = NetworkSimulator.run(RingAllReduce.INSTANCE, n, 1, Float.BYTES, SEGMENT,
        cpu.machineCores(2).crowded(0.5)).seconds();
    int moves = n * 2 * (n - 1) * 2;
    assertEquals(tiny, tinyCrowded, moves * Float.BYTES / 1e9 + 1e-12, "one element per rank");
    assertThrows(IllegalArgumentException.class, () -> cpu.crowded(0));
    assertThrows(IllegalArgumentException.class, () -> cpu.crowded(1.5));
  }

  @Test
  void shouldChargeTheReceiverForReducing() {
    double overhead = 2e-6;
    double reduce = 1e9;
    double copy = 4e9;
    NetworkModel m = linksOnly().cpu(overhead, reduce, copy);
    SimulationResult r = NetworkSimulator.run(HalvingDoublingAllReduce.INSTANCE, 2, 2000, Float.BYTES, SEGMENT, m);
    // Step 1: send half (4000 B: overhead + copy into the frame), wait for the peer's half, reduce it;
    // step 2: send the reduced half, receive and copy the other.
    double send = overhead + 4000 / copy;
    double wire = (4000 + 64) / GBIT + ALPHA;
    double step1 = send + wire + overhead + 4000 / reduce;
    double step2 = send + wire + overhead + 4000 / copy;
    assertEquals(step1 + step2, r.seconds(), 1e-12);
  }

  @Test
  void shouldSimulateAThousandRanksInSeconds() {
    int n = 1024;
    int len = 16 << 20; // 64 MiB of floats
    long start = System.nanoTime();
    SimulationResult r = NetworkSimulator.run(RingAllReduce.INSTANCE, n, len, Float.BYTES, 65536,
        NetworkModel.of(10, 10));
    double wall = (System.nanoTime() - start) / 1e9;
    long expected = 2L * (n - 1) * len * Float.BYTES / n;
    assertEquals(expected, r.networkBytes(0));
    assertEquals(expected, r.networkBytes(n - 1));
    // busbw can not beat the link.
    assertTrue(r.busBytesPerSecond((long) len * Float.BYTES, n) < 10e9 / 8, "busbw " + r.busBytesPerSecond(len, n));
    System.out.printf("1024 ranks, 64 MiB ring: %.3f ms simulated, %d events in %.2f s%n", r.seconds() * 1e3,
        r.events(), wall);
  }
}
