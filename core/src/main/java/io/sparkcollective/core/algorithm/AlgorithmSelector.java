package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Picks the all-reduce algorithm for a message of {@code bytes} on {@code ranks} ranks, like NCCL's tuning:
 * a forced algorithm overrides everything; otherwise AUTO decides in one of two ways.
 *
 * <p>With the link unknown (the default), a table measured on one host: for small messages DIRECT (one
 * latency) in small groups whose ranks reach each other through memory, and at two ranks, else
 * RECURSIVE_DOUBLING (log2 N messages per rank instead of N - 1: on sockets each message costs its system
 * calls); HALVING_DOUBLING for medium ones (log N latencies, bandwidth-optimal for powers of two), RING for
 * large ones (bandwidth-optimal for any N, best pipelined); thresholds come from configuration.
 * HALVING_DOUBLING on a group that is not a power of two first folds the extra ranks in (each sends its whole
 * vector to a partner, which sends the whole result back at the end): two full-vector transfers in a row on
 * those links, against the ring's 2(N-1)/N spread over every link, so such groups take RING above DIRECT's
 * size (at N=3, 1 MiB over 1 Gbit/s links: 25.2 ms against 11.7). When some process holds several ranks of a
 * group that spans several, HIERARCHICAL, with the table's choice across processes for 1/k of the vector. The
 * table holds where it was measured: groups of up to {@link Tuning#TABLE_MAX_PROCESSES} processes of one host,
 * and groups whose every peer is reached through memory. Larger groups, and groups across hosts, follow the cost
 * model below on the link they measure or an assumed one of {@link Tuning#ASSUMED_LINK_MBPS} (the table's
 * thresholds cannot follow the group size: at 1000 ranks on 100 Gbit/s links it sent 64 KiB to the ring, 14.0 ms
 * against halving-doubling's 0.20 in the simulator; nor the link: at 3 hosts on 1 Gbit/s links its
 * RECURSIVE_DOUBLING for 16 KiB took 414 us against the ring's 208, simulated).
 *
 * <p>Told the link ({@code algorithm.linkMbps}, the latency of a message between hosts,
 * {@code algorithm.stepMicros}, and the CPU a message costs on each side, {@code algorithm.messageMicros}), AUTO
 * takes the candidate that {@link AllReduceCostModel} predicts fastest for the group's size and placement: RING,
 * HALVING_DOUBLING, DIRECT, RECURSIVE_DOUBLING, RING_2D where the group size has factors and hosts hold equal
 * blocks of consecutive ranks, and HIERARCHICAL over each of the first four when processes hold several ranks. The
 * fixed table cannot follow the group size: at 256 ranks on 10 Gbit/s links HALVING_DOUBLING beats RING up
 * to 64 MiB (the ring's 2(N-1) latencies), at 16 ranks DIRECT beats it for small messages, at 100 ranks RING
 * loses to it up to 1 MiB (see benchmarks/README.md "Scale on a simulated network", where the simulator judges
 * both). RING is preferred to HALVING_DOUBLING predicted faster by less than
 * {@link Tuning#MODEL_RING_PREFERENCE}.
 * Choices are kept per size class (a quarter of an octave) and placement, so a call costs a table look-up.
 *
 * <p>Measured ({@code algorithm.measureLink}, on by default): a group that would follow the model on the assumed
 * link measures its link instead ({@link LinkProbe}; {@link #measures}, {@link #measured}) and AUTO then acts as if
 * told that link, with the latency and the CPU per message the probe found.
 */
public final class AlgorithmSelector {
  private final long directMaxBytes;
  private final int directMaxRanks;
  private final long ringMinBytes;
  private final Algorithm forced;
  /** Whether every peer is reached through memory (see {@link #table}). */
  private final boolean memoryToAll;
  /** Whether the group is on one host, where the table was measured (see {@link #modelFor}). */
  private final boolean oneHost;
  /**
   * The cost model: of the link when it is known; of an assumed one ({@link Tuning#ASSUMED_LINK_MBPS}) when it is
   * not, for groups past {@link Tuning#TABLE_MAX_PROCESSES} processes or across hosts only; null: the table
   * everywhere.
   */
  private final AllReduceCostModel model;
  /** Whether {@link #model}'s link is assumed, not told. */
  private final boolean assumed;
  /** Whether a group for which the link is assumed measures it first ({@link #measures}). */
  private final boolean measureLink;
  /** The model's choices for one placement, by size class; replaced when another placement asks. */
  private volatile Choices choices;

  /**
   * Choices by model and placement, shared by every selector of this process: each barrier stage forms a new group
   * (and selector), mostly with the placement and link of the stage before, and at 1000 ranks one prediction takes
   * up to about 100 ms per size class. The {@link #SHARED_PLACEMENTS} most recently used are kept.
   */
  private static final int SHARED_PLACEMENTS = 16;
  private static final Map<List<Object>, AlgorithmChoice[]> SHARED = new LinkedHashMap<List<Object>,
      AlgorithmChoice[]>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<List<Object>, AlgorithmChoice[]> eldest) {
      return size() > SHARED_PLACEMENTS;
    }
  };
  /** Predictions made in this process (each a size class of a model and placement not seen before). */
  private static final AtomicLong PREDICTIONS = new AtomicLong();

  private static final AlgorithmChoice[] FLAT = {AlgorithmChoice.of(Algorithm.RING, null),
      AlgorithmChoice.of(Algorithm.HALVING_DOUBLING, null), AlgorithmChoice.of(Algorithm.DIRECT, null),
      AlgorithmChoice.of(Algorithm.RECURSIVE_DOUBLING, null)};
  /** The two-dimensional ring, a candidate where the group size has factors. */
  private static final AlgorithmChoice[] TWO_D = {AlgorithmChoice.of(Algorithm.RING_2D, null)};
  private static final AlgorithmChoice[] NONE = {};
  private static final AlgorithmChoice[] TWO_LEVEL = {AlgorithmChoice.of(Algorithm.HIERARCHICAL, Algorithm.RING),
      AlgorithmChoice.of(Algorithm.HIERARCHICAL, Algorithm.HALVING_DOUBLING),
      AlgorithmChoice.of(Algorithm.HIERARCHICAL, Algorithm.DIRECT),
      AlgorithmChoice.of(Algorithm.HIERARCHICAL, Algorithm.RECURSIVE_DOUBLING)};

  /** Size classes per octave of the model's table. */
  private static final int CLASSES_PER_OCTAVE = 4;

  private static final class Choices {
    final Placement placement;
    final AlgorithmChoice[] bySize;

    Choices(Placement placement, AlgorithmChoice[] bySize) {
      this.placement = placement;
      this.bySize = bySize;
    }
  }

  /** The table alone, whatever the group (what AUTO took with the link unknown before it assumed one). */
  public AlgorithmSelector(long directMaxBytes, int directMaxRanks, long ringMinBytes, Algorithm forced) {
    this(directMaxBytes, directMaxRanks, ringMinBytes, forced, null, false);
  }

  /**
   * With {@code linkMbps} > 0 (megabits per second of each host's link, each way), AUTO follows the cost model
   * with {@code latencyMicros} per message between hosts and segments of {@code segmentBytes}; with 0, the table.
   */
  public AlgorithmSelector(long directMaxBytes, int directMaxRanks, long ringMinBytes, Algorithm forced,
      long linkMbps, long latencyMicros, int segmentBytes) {
    this(directMaxBytes, directMaxRanks, ringMinBytes, forced, linkMbps, latencyMicros, segmentBytes, false);
  }

  /**
   * The same for a group whose rank reaches every peer through memory ({@code memoryToAll}: ranks of its process
   * and shared-memory rings to the other processes of its host), which the table treats apart for small
   * messages.
   */
  public AlgorithmSelector(long directMaxBytes, int directMaxRanks, long ringMinBytes, Algorithm forced,
      long linkMbps, long latencyMicros, int segmentBytes, boolean memoryToAll) {
    this(directMaxBytes, directMaxRanks, ringMinBytes, forced, linkMbps <= 0 ? null
        : AllReduceCostModel.ofLink(linkMbps, latencyMicros, Tuning.MODEL_MESSAGE_OVERHEAD_SECONDS * 1e6,
            segmentBytes), memoryToAll);
  }

  /** With {@code model} (null: the link unknown, the table) for AUTO. */
  public AlgorithmSelector(long directMaxBytes, int directMaxRanks, long ringMinBytes, Algorithm forced,
      AllReduceCostModel model, boolean memoryToAll) {
    this(directMaxBytes, directMaxRanks, ringMinBytes, forced, model, false, false, memoryToAll, true);
  }

  private AlgorithmSelector(long directMaxBytes, int directMaxRanks, long ringMinBytes, Algorithm forced,
      AllReduceCostModel model, boolean assumed, boolean measureLink, boolean memoryToAll, boolean oneHost) {
    this.memoryToAll = memoryToAll;
    this.oneHost = oneHost;
    this.directMaxBytes = directMaxBytes;
    this.directMaxRanks = directMaxRanks;
    this.ringMinBytes = ringMinBytes;
    this.forced = forced;
    this.model = model;
    this.assumed = assumed;
    this.measureLink = measureLink;
  }

  /**
   * As {@code config} says (its thresholds, forced algorithm, and the link if it gives one), for a group whose
   * messages go in segments of {@code segmentBytes}, which reaches every peer through memory or not
   * ({@code memoryToAll}) and lives on one host or not ({@code oneHost}). With the link unknown, groups of up to
   * {@link Tuning#TABLE_MAX_PROCESSES} processes of one host, and groups whose every peer is reached through
   * memory, follow the table; the others the cost model on the link they measure, or on an assumed one.
   */
  public static AlgorithmSelector of(CollectiveConfig config, boolean memoryToAll, boolean oneHost,
      int segmentBytes) {
    boolean told = config.linkMbps() > 0;
    AllReduceCostModel model = told ? AllReduceCostModel.ofLink(config.linkMbps(), config.stepMicros(),
        config.messageMicros(), segmentBytes)
        : AllReduceCostModel.ofLink(Tuning.ASSUMED_LINK_MBPS, Tuning.ASSUMED_STEP_MICROS, config.messageMicros(),
            segmentBytes);
    return new AlgorithmSelector(config.directMaxBytes(), config.directMaxRanks(), config.ringMinBytes(),
        config.algorithm(), model, !told, !told && config.measureLink(), memoryToAll, oneHost);
  }

  /**
   * Whether a call asking for {@code requested} on {@code placement} should have the link measured first
   * ({@link LinkProbe}) and be chosen by {@link #measured}: AUTO, the link not told and measuring allowed
   * ({@code algorithm.measureLink}), and a group that would follow the model on the assumed link. The same on
   * every rank of a group (configuration and placement are).
   */
  public boolean measures(Algorithm requested, Placement placement) {
    return measureLink && requested == Algorithm.AUTO && forced == Algorithm.AUTO && modelFor(placement);
  }

  /** This selector with the link of {@code measured} as if told (the thresholds and forced algorithm kept). */
  public AlgorithmSelector measured(AllReduceCostModel measured) {
    return new AlgorithmSelector(directMaxBytes, directMaxRanks, ringMinBytes, forced, measured, false, false,
        memoryToAll, oneHost);
  }

  /**
   * Whether AUTO follows the cost model for {@code placement}: told the link, for every group that spans
   * processes (the link is between them); with an assumed one, for groups of more processes than the table was
   * measured on, and groups across hosts that measure their link (the table was measured on one host, where a
   * message between processes costs microseconds of CPU on shared cores), unless every peer is reached through
   * memory (no network link).
   */
  private boolean modelFor(Placement placement) {
    int processes = placement.nodeCount();
    return model != null && processes > 1
        && (!assumed || (!memoryToAll && ((measureLink && !oneHost) || processes > Tuning.TABLE_MAX_PROCESSES)));
  }

  /** The concrete algorithm for a call that asked for {@code requested}, ignoring process boundaries. */
  public Algorithm select(Algorithm requested, long bytes, int ranks) {
    if (requested != Algorithm.AUTO) {
      return requested;
    }
    if (forced != Algorithm.AUTO) {
      return forced;
    }
    Placement flat = Placement.flat(ranks);
    return modelFor(flat) ? modelled(bytes, flat).algorithm() : table(bytes, ranks);
  }

  /**
   * The algorithm, and for HIERARCHICAL the one run across processes, for a call of {@code bytes} on a group
   * placed as {@code placement}: AUTO takes HIERARCHICAL when some process holds several ranks of a group that
   * spans several processes (with the table; the model weighs it against the flat ones); the cross-process part
   * then carries 1/k of the vector with k ranks per process.
   */
  public AlgorithmChoice select(Algorithm requested, long bytes, Placement placement) {
    // The link is between processes: a group inside one never crosses it.
    if (requested == Algorithm.AUTO && forced == Algorithm.AUTO && modelFor(placement)) {
      return modelled(bytes, placement);
    }
    int ranks = placement.ranks();
    int nodes = placement.nodeCount();
    Algorithm a = requested != Algorithm.AUTO ? requested : forced != Algorithm.AUTO ? forced
        : placement.isTwoLevel() ? Algorithm.HIERARCHICAL : table(bytes, ranks);
    int k = placement.evenRanksPerNode();
    if (a != Algorithm.HIERARCHICAL) {
      return AlgorithmChoice.of(a, null);
    }
    Algorithm inner = modelFor(placement) ? best(bytes, placement, TWO_LEVEL).inner()
        : table(k > 0 ? bytes / k : bytes, nodes);
    return AlgorithmChoice.of(Algorithm.HIERARCHICAL, inner);
  }

  private AlgorithmChoice modelled(long bytes, Placement placement) {
    Choices c = choices;
    if (c == null || !c.placement.equals(placement)) {
      // This group's own placement object, so that its later calls compare it by reference (an equal placement
      // of another group would be compared element by element on every call); the choices shared.
      c = new Choices(placement, shared(model, placement));
      choices = c;
    }
    int cls = sizeClass(bytes);
    AlgorithmChoice choice = c.bySize[cls];
    if (choice == null) {
      AlgorithmChoice[] twoD = twoDimensional(placement) ? TWO_D : NONE;
      choice = best(bytes, placement, FLAT, twoD, placement.isTwoLevel() ? TWO_LEVEL : NONE);
      PREDICTIONS.incrementAndGet();
      c.bySize[cls] = choice; // racy but benign: the same value from any thread or selector, immutable
    }
    return choice;
  }

  /**
   * The choices of {@code model} on {@code placement} made so far in this process, by size class (the entry made
   * if new).
   */
  private static AlgorithmChoice[] shared(AllReduceCostModel model, Placement placement) {
    List<Object> key = List.of(model, placement);
    synchronized (SHARED) {
      return SHARED.computeIfAbsent(key, k -> new AlgorithmChoice[64 * CLASSES_PER_OCTAVE]);
    }
  }

  /** Predictions made in this process so far (for tests: a choice shared is not predicted again). */
  static long predictions() {
    return PREDICTIONS.get();
  }

  /**
   * Whether RING_2D is a candidate: the group size has factors, and hosts hold equal blocks of consecutive ranks
   * (how its rows and columns are modelled).
   */
  private static boolean twoDimensional(Placement placement) {
    return TwoDimensionalRingAllReduce.rowSize(placement.ranks()) > 0 && placement.evenRanksPerNode() > 0
        && placement.consecutive();
  }

  /** Quarter-octave class of a size: choices within one class are taken for all its sizes. */
  static int sizeClass(long bytes) {
    long b = Math.max(1, bytes);
    int octave = 63 - Long.numberOfLeadingZeros(b);
    int quarter = octave >= 2 ? (int) ((b >>> (octave - 2)) & 3) : 0;
    return octave * CLASSES_PER_OCTAVE + quarter;
  }

  private AlgorithmChoice best(long bytes, Placement placement, AlgorithmChoice[]... candidates) {
    AlgorithmChoice best = null;
    double bestSeconds = Double.POSITIVE_INFINITY;
    AlgorithmChoice ring = null;
    double ringSeconds = Double.POSITIVE_INFINITY;
    for (AlgorithmChoice[] group : candidates) {
      for (AlgorithmChoice c : group) {
        double t = model.seconds(c, bytes, placement);
        if (t < bestSeconds) {
          best = c;
          bestSeconds = t;
        }
        boolean isRing = (c.inner() != null ? c.inner() : c.algorithm()) == Algorithm.RING;
        if (isRing && t < ringSeconds) {
          ring = c;
          ringSeconds = t;
        }
      }
    }
    boolean halvingDoubling = (best.inner() != null ? best.inner() : best.algorithm()) == Algorithm.HALVING_DOUBLING;
    return halvingDoubling && ringSeconds <= bestSeconds * Tuning.MODEL_RING_PREFERENCE ? ring : best;
  }

  /**
   * Small messages: DIRECT for two ranks (one message each way, as any algorithm), and for up to
   * {@code directMaxRanks} when every peer is reached through memory, where its N - 1 messages at once are
   * cheap; else RECURSIVE_DOUBLING, whose log2 N steps of one message beat N - 1 socket messages per rank (on
   * loopback TCP at 3 and 4 processes about 1.2x and 1.7x faster at 4 bytes) and the 2 log2 N steps of
   * HALVING_DOUBLING.
   */
  private Algorithm table(long bytes, int ranks) {
    if (bytes <= directMaxBytes) {
      return ranks <= 2 || (memoryToAll && ranks <= directMaxRanks) ? Algorithm.DIRECT
          : Algorithm.RECURSIVE_DOUBLING;
    }
    boolean powerOfTwo = (ranks & (ranks - 1)) == 0;
    if (bytes < ringMinBytes && (powerOfTwo || bytes <= directMaxBytes)) {
      return Algorithm.HALVING_DOUBLING;
    }
    return Algorithm.RING;
  }

  public static AllReduceAlgorithm implementation(Algorithm algorithm) {
    switch (algorithm) {
      case RING:
        return RingAllReduce.INSTANCE;
      case DIRECT:
        return DirectAllReduce.INSTANCE;
      case HALVING_DOUBLING:
        return HalvingDoublingAllReduce.INSTANCE;
      case RING_2D:
        return TwoDimensionalRingAllReduce.INSTANCE;
      case RECURSIVE_DOUBLING:
        return RecursiveDoublingAllReduce.INSTANCE;
      default:
        throw new IllegalArgumentException("no implementation for " + algorithm);
    }
  }

  /** The implementation of {@code choice} (from {@link #select(Algorithm, long, Placement)}) over {@code placement}. */
  public static AllReduceAlgorithm implementation(AlgorithmChoice choice, Placement placement) {
    return choice.algorithm() == Algorithm.HIERARCHICAL
        ? new HierarchicalAllReduce(placement, implementation(choice.inner())) : implementation(choice.algorithm());
  }
}
