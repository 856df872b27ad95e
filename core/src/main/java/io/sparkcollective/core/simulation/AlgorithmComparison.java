package io.sparkcollective.core.simulation;

import io.sparkcollective.core.algorithm.AlgorithmChoice;
import io.sparkcollective.core.algorithm.AlgorithmSelector;
import io.sparkcollective.core.algorithm.AllReduceAlgorithm;
import io.sparkcollective.core.algorithm.AllReduceCostModel;
import io.sparkcollective.core.algorithm.LinkProbe;
import io.sparkcollective.core.algorithm.Placement;
import io.sparkcollective.core.algorithm.TwoDimensionalRingAllReduce;
import io.sparkcollective.core.api.Algorithm;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every algorithm the library can run for one all-reduce (group size, message size, placement, network),
 * simulated once, against what any number of selectors pick: the yardstick for AUTO. On one rank per host the
 * candidates are RING, HALVING_DOUBLING, DIRECT, RECURSIVE_DOUBLING and (where the group size has factors)
 * RING_2D; with several ranks per host also HIERARCHICAL over each of the first four.
 *
 * <p>DIRECT puts (N-1) copies of the vector on every link, RECURSIVE_DOUBLING log2 N, which at large groups and
 * sizes is both hopeless and expensive to simulate: they are left out (reported as not run) where the time
 * their host links need alone is over twice the best other candidate's time, or where they would take more
 * than {@link #MAX_MESSAGES} messages; unless a selector picks one, when it runs after all.
 */
public final class AlgorithmComparison {
  /** Largest number of messages one candidate may take before it is left out as hopeless. */
  static final long MAX_MESSAGES = 30_000_000L;

  private final Map<AlgorithmChoice, Double> seconds = new LinkedHashMap<>();
  private final int ranks;
  private final int length;
  private final int segment;
  private final NetworkModel model;
  private final Placement placement;

  private AlgorithmComparison(int ranks, int length, int segment, NetworkModel model, Placement placement) {
    this.ranks = ranks;
    this.length = length;
    this.segment = segment;
    this.model = model;
    this.placement = placement;
  }

  /**
   * Simulates the candidates for an all-reduce of {@code bytes} (float32 elements, at least one) on
   * {@code ranks} ranks under {@code model}, in segments of {@code segmentBytes}.
   */
  public static AlgorithmComparison of(int ranks, long bytes, int segmentBytes, NetworkModel model) {
    int length = (int) Math.max(1, bytes / Float.BYTES);
    long wireBytes = (long) length * Float.BYTES;
    int segment = Math.max(1, segmentBytes / Float.BYTES);
    Placement placement = placement(ranks, model);
    AlgorithmComparison c = new AlgorithmComparison(ranks, length, segment, model, placement);
    List<AlgorithmChoice> candidates = new ArrayList<>();
    Algorithm[] flat = {Algorithm.RING, Algorithm.HALVING_DOUBLING, Algorithm.DIRECT, Algorithm.RECURSIVE_DOUBLING};
    for (Algorithm a : flat) {
      candidates.add(AlgorithmChoice.of(a, null));
    }
    if (TwoDimensionalRingAllReduce.rowSize(ranks) > 0) {
      candidates.add(AlgorithmChoice.of(Algorithm.RING_2D, null));
    }
    if (placement.isTwoLevel()) {
      for (Algorithm a : flat) {
        candidates.add(AlgorithmChoice.of(Algorithm.HIERARCHICAL, a));
      }
    }
    double best = Double.POSITIVE_INFINITY;
    // DIRECT and RECURSIVE_DOUBLING ones last, so that the best of the others bounds them.
    for (boolean last : new boolean[] {false, true}) {
      for (AlgorithmChoice choice : candidates) {
        if (latencyBound(choice) != last) {
          continue;
        }
        if (last && hopeless(choice, ranks, wireBytes, segment, model, placement, best)) {
          c.seconds.put(choice, Double.NaN);
          continue;
        }
        best = Math.min(best, c.simulate(choice));
      }
    }
    return c;
  }

  /** The placement of {@code ranks} ranks under {@code model}: a host's ranks in one process. */
  public static Placement placement(int ranks, NetworkModel model) {
    int[] nodes = new int[ranks];
    for (int r = 0; r < ranks; r++) {
      nodes[r] = model.hostOf(r);
    }
    return Placement.of(nodes);
  }

  /**
   * The link a group of {@code ranks} measures under {@code model} ({@link LinkProbe}: its round trips of one
   * element and of one segment of {@code segmentBytes} and its fan, simulated); the CPU per message found is taken
   * as at least {@code messageMicros} (algorithm.messageMicros), as the engine takes it.
   */
  public static AllReduceCostModel measureLink(int ranks, int segmentBytes, NetworkModel model, double messageMicros) {
    Placement placement = placement(ranks, model);
    int segment = Math.max(1, segmentBytes / Float.BYTES);
    int large = LinkProbe.largeElements(segment, Float.BYTES);
    AllReduceAlgorithm roundTrip = LinkProbe.roundTrip(placement);
    double small = NetworkSimulator.run(roundTrip, ranks, 1, Float.BYTES, segment, model).seconds();
    double big = NetworkSimulator.run(roundTrip, ranks, large, Float.BYTES, segment, model).seconds();
    double fan = NetworkSimulator.run(LinkProbe.fan(placement), ranks, 1, Float.BYTES, segment, model).seconds();
    return LinkProbe.estimate(small, fan, big, placement.nodeCount(), Float.BYTES, (long) large * Float.BYTES,
        messageMicros, segmentBytes);
  }

  private double simulate(AlgorithmChoice choice) {
    double t = NetworkSimulator.run(AlgorithmSelector.implementation(choice, placement), ranks, length,
        Float.BYTES, segment, model).seconds();
    seconds.put(choice, t);
    return t;
  }

  /** What {@code selector} picks here (simulated now if it is a candidate that was left out). */
  public AlgorithmChoice pickedBy(AlgorithmSelector selector) {
    AlgorithmChoice picked = selector.select(Algorithm.AUTO, (long) length * Float.BYTES, placement);
    Double t = seconds.get(picked);
    if (t == null || t.isNaN()) {
      simulate(picked);
    }
    return picked;
  }

  /** {@code picked}'s time (from {@link #pickedBy}) over the best time: 1 for the fastest. */
  public double overBest(AlgorithmChoice picked) {
    Double t = seconds.get(picked);
    if (t == null || t.isNaN()) {
      throw new IllegalArgumentException(picked + " was not simulated here; pass what pickedBy returned");
    }
    return t / bestSeconds();
  }

  /** DIRECT or RECURSIVE_DOUBLING, flat or inside HIERARCHICAL: the whole vector to every partner. */
  private static boolean latencyBound(AlgorithmChoice c) {
    Algorithm a = c.inner() != null ? c.inner() : c.algorithm();
    return a == Algorithm.DIRECT || a == Algorithm.RECURSIVE_DOUBLING;
  }

  /**
   * Whether a DIRECT or RECURSIVE_DOUBLING candidate's link time alone exceeds twice {@code best}, or it takes
   * too many messages.
   */
  private static boolean hopeless(AlgorithmChoice c, int ranks, long bytes, int segment, NetworkModel model,
      Placement placement, double best) {
    int k = model.ranksPerHost();
    int hosts = placement.nodeCount();
    long segments = Math.max(1, (bytes / Float.BYTES + segment - 1) / segment);
    boolean hierarchical = c.algorithm() == Algorithm.HIERARCHICAL;
    boolean doubling = (hierarchical ? c.inner() : c.algorithm()) == Algorithm.RECURSIVE_DOUBLING;
    double linkBytes;
    long messages;
    if (hierarchical) {
      // k ranks per host each send 1/k of the vector to (hosts - 1) peers, or in log2 hosts steps.
      int partners = doubling ? levels(hosts) : hosts - 1;
      linkBytes = (double) partners * bytes;
      messages = (long) ranks * partners * Math.max(1, segments / k);
    } else if (doubling) {
      // Each of a host's k ranks sends the whole vector off the host in every step past the host's own ranks.
      int remoteSteps = Math.max(0, levels(ranks) - levels(k));
      linkBytes = (double) k * remoteSteps * bytes;
      messages = (long) ranks * (levels(ranks) + 1) * segments;
    } else {
      linkBytes = (double) k * (ranks - k) * bytes;
      messages = (long) ranks * (ranks - 1) * segments;
    }
    return messages > MAX_MESSAGES || linkBytes / model.linkBytesPerSecond() > 2 * best;
  }

  /** log2 of the largest power of two at most {@code n}. */
  private static int levels(int n) {
    return 31 - Integer.numberOfLeadingZeros(Math.max(1, n));
  }

  /** Simulated seconds of each candidate; NaN for one left out as hopeless. */
  public Map<AlgorithmChoice, Double> seconds() {
    return Collections.unmodifiableMap(seconds);
  }

  /** The fastest candidate. */
  public AlgorithmChoice best() {
    AlgorithmChoice best = null;
    for (Map.Entry<AlgorithmChoice, Double> e : seconds.entrySet()) {
      if (!Double.isNaN(e.getValue()) && (best == null || e.getValue() < seconds.get(best))) {
        best = e.getKey();
      }
    }
    return best;
  }

  public double bestSeconds() {
    return seconds.get(best());
  }
}
