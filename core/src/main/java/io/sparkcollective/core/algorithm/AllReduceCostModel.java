package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.Blocks;
import io.sparkcollective.core.config.Tuning;

/*
 * What each algorithm costs, in the terms of the simulator's network model (core simulation.NetworkModel), for
 * AUTO to compare them when it knows the link:
 *
 *   send a segment of s bytes     snd(s) = o + s/copy        (CPU: into a frame)
 *   on the wire                   w(s)   = (s + header) / link rate, in turn with the host's other segments
 *   receive and combine           red(s) = o + s/reduce      receive and copy   cpy(s) = o + s/copy
 *   latency per message           alpha between hosts, local between ranks of one host
 *
 *   ring, two-dimensional ring    the schedule itself, step by step and segment by segment (whole segments and
 *   and hierarchical's rings      the remainder), for the ranks of one host, which stand for every host's
 *                                 (RingChain); the two-dimensional ring's rows and columns are such rings, as
 *                                 many sharing a host's link as leave it
 *   halving-doubling              on a power of two the same for one host's ranks (HalvingDoublingChain); with
 *                                 folded ranks, which are unlike the others, every rank at its own pace, event by
 *                                 event (HalvingDoublingRanks)
 *   recursive doubling            as halving-doubling (chain or every rank), the whole vector in each step; the
 *                                 upper block's rank stashes its own segment and combines it after the received
 *   direct                        send (N-1) copies, then fold N-1 contributions per segment in rank order
 *   hierarchical, per piece       k-1 in-place reads, the inner all-reduce across hosts on 1/k of the piece
 *                                 (the k inner groups share each host's link), k-1 in-place copies
 *
 * The rings and halving-doubling on powers of two come out within 2% of the simulation, the doubling algorithms
 * with folded ranks within 7% (hierarchical over them 11%), the rest within about 15%
 * (CostModelAgainstSimulationTest), which is all AUTO needs: near a crossover any of the close candidates is
 * good. A prediction costs up to about 50 ms (1000 ranks, folded halving-doubling), once per size class and
 * placement.
 */

/** Predicted seconds of each all-reduce on a known network: what AUTO minimises when told the link. */
public final class AllReduceCostModel {
  private final double link;
  private final double alpha;
  private final double localAlpha;
  private final double overhead;
  private final double reduce;
  private final double copy;
  private final int header;
  private final int segmentBytes;

  /**
   * @param linkBytesPerSecond each host's link, each way
   * @param latencySeconds one message's latency between hosts
   * @param localLatencySeconds between ranks of one host
   * @param overheadSeconds CPU per message on each side
   * @param reduceBytesPerSecond bytes a rank combines per second
   * @param copyBytesPerSecond bytes a rank copies per second
   * @param headerBytes per message on the wire
   * @param segmentBytes payload of a segment
   */
  public AllReduceCostModel(double linkBytesPerSecond, double latencySeconds, double localLatencySeconds,
      double overheadSeconds, double reduceBytesPerSecond, double copyBytesPerSecond, int headerBytes,
      int segmentBytes) {
    this.link = linkBytesPerSecond;
    this.alpha = latencySeconds;
    this.localAlpha = localLatencySeconds;
    this.overhead = overheadSeconds;
    this.reduce = reduceBytesPerSecond;
    this.copy = copyBytesPerSecond;
    this.header = headerBytes;
    this.segmentBytes = segmentBytes;
  }

  /** Each host's link, each way, in bytes per second. */
  public double linkBytesPerSecond() {
    return link;
  }

  /** One message's latency between hosts, in seconds. */
  public double latencySeconds() {
    return alpha;
  }

  /** The CPU one message costs on each side, in seconds. */
  public double overheadSeconds() {
    return overhead;
  }

  /** Models of the same parameters predict the same: groups may share what one of them chose. */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof AllReduceCostModel)) {
      return false;
    }
    AllReduceCostModel m = (AllReduceCostModel) o;
    return link == m.link && alpha == m.alpha && localAlpha == m.localAlpha && overhead == m.overhead
        && reduce == m.reduce && copy == m.copy && header == m.header && segmentBytes == m.segmentBytes;
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(link, alpha, localAlpha, overhead, reduce, copy, header, segmentBytes);
  }

  /**
   * The model of a link a group is told: {@code linkMbps} each way, {@code latencyMicros} per message between
   * hosts, {@code messageMicros} of CPU per message on each side; reduction, copy, header and local latency
   * from {@link Tuning}.
   */
  public static AllReduceCostModel ofLink(long linkMbps, long latencyMicros, double messageMicros,
      int segmentBytes) {
    return new AllReduceCostModel(linkMbps * 1e6 / 8, latencyMicros * 1e-6, Tuning.MODEL_LOCAL_LATENCY_SECONDS,
        messageMicros * 1e-6, Tuning.MODEL_REDUCE_BYTES_PER_SECOND, Tuning.MODEL_COPY_BYTES_PER_SECOND,
        Tuning.MODEL_HEADER_BYTES, segmentBytes);
  }

  /** Predicted seconds of {@code choice} for {@code bytes} of float32 on {@code placement}. */
  public double seconds(AlgorithmChoice choice, long bytes, Placement placement) {
    int n = placement.ranks();
    if (n < 2) {
      return 0;
    }
    int k = Math.max(1, placement.evenRanksPerNode());
    boolean twoLevel = placement.isTwoLevel();
    switch (choice.algorithm()) {
      case HIERARCHICAL:
        return hierarchical(choice.inner(), bytes, placement);
      case RING:
        return ring(n, bytes, twoLevel ? k : 1);
      case HALVING_DOUBLING:
        return halvingDoubling(n, bytes, twoLevel ? k : 1, 1);
      case DIRECT:
        return direct(n, bytes, twoLevel ? k : 1, 1);
      case RECURSIVE_DOUBLING:
        return recursiveDoubling(n, bytes, twoLevel ? k : 1, 1);
      case RING_2D:
        return ring2d(n, bytes, twoLevel ? k : 1);
      default:
        throw new IllegalArgumentException("no cost for " + choice);
    }
  }

  double snd(double s) {
    return overhead + s / copy;
  }

  double red(double s) {
    return overhead + s / reduce;
  }

  double cpy(double s) {
    return overhead + s / copy;
  }

  /** Copying {@code s} bytes aside in memory (no message). */
  double stash(double s) {
    return s / copy;
  }

  /** Combining {@code s} bytes already in memory (no message). */
  double combine(double s) {
    return s / reduce;
  }

  double wire(double s, int flows) {
    return (s + header) * flows / link;
  }

  double alpha() {
    return alpha;
  }

  double localAlpha() {
    return localAlpha;
  }

  /** Segments of a move of {@code bytes}, and the size of each. */
  private int segments(double bytes) {
    return Math.max(1, (int) Math.ceil(bytes / segmentBytes));
  }

  /**
   * A ring of {@code n} ranks, {@code k} consecutive ones per host (one hop in k crosses hosts), each host's
   * link carrying one flow each way.
   */
  double ring(int n, long bytes, int k) {
    long elements = Math.max(1, bytes / 4);
    long pass = (long) RingAllReduce.CHUNK_SEGMENTS * (segmentBytes / 4) * n;
    RingChain ring = new RingChain(this, k, k < n, 1, segmentBytes);
    passes(ring, elements, pass, 2 * (n - 1), n - 1, n);
    return ring.finish();
  }

  /**
   * Runs {@code chain} over {@code elements} in passes of {@code pass} elements, each pass's chunk a
   * {@code parts}-th of it.
   */
  private static void passes(RingChain chain, long elements, long pass, int steps, int reduceSteps, int parts) {
    long passes = Math.max(1, (elements + pass - 1) / pass);
    long last = elements - (passes - 1) * pass;
    if (passes > 1) {
      chain.passes(passes - 1, steps, reduceSteps, pass * 4.0 / parts);
    }
    chain.pass(steps, reduceSteps, last * 4.0 / parts);
  }

  /**
   * The two-dimensional ring on {@code n} ranks, {@code k} consecutive ones per host: per piece of one ring
   * pass, the row's reduce-scatter and all-gather (a-1 steps each over chunks of 1/a of the piece) and the
   * column's ring (2(b-1) steps over chunks of 1/n).
   */
  double ring2d(int n, long bytes, int k) {
    int a = TwoDimensionalRingAllReduce.rowSize(n);
    if (a == 0) {
      return ring(n, bytes, k);
    }
    int b = n / a;
    long elements = Math.max(1, bytes / 4);
    long pass = (long) RingAllReduce.CHUNK_SEGMENTS * (segmentBytes / 4) * n;
    long passes = Math.max(1, (elements + pass - 1) / pass);
    long last = elements - (passes - 1) * pass;
    // Row i's ring: ranks ia .. ia+a-1, each sending to the next (the last to the first); column j's: j, j+a, ...
    int[] rowHops = crossings(n, k, a, 1, a);
    int[] columnHops = crossings(n, k, b, a, 1);
    double full = passes > 1 ? ring2dPiece(a, b, rowHops, columnHops, pass * 4.0) : 0;
    return (passes - 1) * full + ring2dPiece(a, b, rowHops, columnHops, last * 4.0);
  }

  /**
   * For rings of {@code size} ranks, member i of ring c being rank {@code c * ringStride + i * memberStride}
   * (c from 0 while that stays below n), on hosts of {@code k} consecutive ranks: the most hops of one ring that
   * cross hosts (the slowest ring), and the most hops of all rings that leave one host (the rings sharing its
   * link).
   */
  private static int[] crossings(int n, int k, int size, int memberStride, int ringStride) {
    int[] leaving = new int[(n + k - 1) / k];
    int crossing = 0;
    int rings = n / size;
    for (int c = 0; c < rings; c++) {
      int hops = 0;
      for (int i = 0; i < size; i++) {
        int r = c * ringStride + i * memberStride;
        int next = c * ringStride + ((i + 1) % size) * memberStride;
        if (r / k != next / k) {
          leaving[r / k]++;
          hops++;
        }
      }
      crossing = Math.max(crossing, hops);
    }
    int most = 0;
    for (int l : leaving) {
      most = Math.max(most, l);
    }
    return new int[] {crossing, most};
  }

  /** A ring of {@code size} whose {@code hops[0]} crossings are spread evenly, {@code hops[1]} rings per link. */
  private RingChain ringOf(int size, int[] hops) {
    if (hops[0] == 0) {
      return new RingChain(this, 1, false, 1, segmentBytes);
    }
    return new RingChain(this, Math.max(1, Math.round((float) size / hops[0])), true, hops[1], segmentBytes);
  }

  /**
   * One piece of the two-dimensional ring: the row's reduce-scatter, the column's all-reduce, the row's
   * all-gather, one after the other.
   */
  private double ring2dPiece(int a, int b, int[] rowHops, int[] columnHops, double bytes) {
    RingChain row = ringOf(a, rowHops);
    RingChain column = ringOf(b, columnHops);
    row.pass(a - 1, a - 1, bytes / a);
    column.startAt(row.finish());
    column.pass(2 * (b - 1), b - 1, bytes / ((double) a * b));
    row.startAt(column.finish());
    row.pass(a - 1, 0, bytes / a);
    return row.finish();
  }

  /**
   * The wire time of a rank's first segment when the link's flows together take {@code w} per segment: ranks
   * drift apart by about a latency (they leave the previous step at different times), which hides that much of
   * their queueing behind each other; never less than the segment's own wire time.
   */
  private double queued(double s, double w) {
    return Math.max(wire(s, 1), w - alpha);
  }

  /**
   * Halving-doubling on {@code n} ranks, {@code k} consecutive ones per host; {@code flowsPerHost} other groups
   * run the same at once on each host's link (hierarchical's inner groups).
   */
  double halvingDoubling(int n, long bytes, int k, int flowsPerHost) {
    double v = Math.max(4, bytes / 4 * 4);
    int p = Integer.highestOneBit(n);
    int extra = n - p;
    if (extra > 0) {
      // The fold makes ranks unlike each other: every one is followed.
      return new HalvingDoublingRanks(this, flowsPerHost, n, k, segmentBytes, false).seconds(v);
    }
    // The host's k ranks of this group, or its one rank of each of flowsPerHost groups: alike, so one host's
    // stand for all.
    HalvingDoublingChain chain = new HalvingDoublingChain(this, k * flowsPerHost, k, segmentBytes);
    chain.run(p, v);
    return chain.finish();
  }

  /**
   * Recursive doubling on {@code n} ranks, {@code k} consecutive ones per host, {@code flowsPerHost} groups at
   * once: as halving-doubling's, with the whole vector in every step.
   */
  double recursiveDoubling(int n, long bytes, int k, int flowsPerHost) {
    double v = Math.max(4, bytes / 4 * 4);
    int p = Integer.highestOneBit(n);
    if (n > p) {
      return new HalvingDoublingRanks(this, flowsPerHost, n, k, segmentBytes, true).seconds(v);
    }
    HalvingDoublingChain chain = new HalvingDoublingChain(this, k * flowsPerHost, k, segmentBytes);
    chain.runDoubling(p, v);
    return chain.finish();
  }

  /**
   * Direct on {@code n} ranks, {@code k} per host (each host's link carries k(n-k) copies), with
   * {@code flowsPerHost} groups doing the same at once.
   */
  double direct(int n, long bytes, int k, int flowsPerHost) {
    double v = Math.max(4, bytes / 4 * 4);
    int m = segments(v);
    double s = v / m;
    double send = snd(s);
    double w = wire(s, 1);
    double sends = (double) (n - 1) * m * send;
    // The host's link carries k(n-k) copies of every segment for each of flowsPerHost groups: per message of
    // this rank, its share of that.
    double perMessage = (double) k * (n - k) * w * flowsPerHost / (n - 1);
    double firstNeeded = arrival((n - 2) * (double) m + 1, send, perMessage, s);
    double lastArrival = arrival((n - 1) * (double) m, send, perMessage, s);
    double fold = (double) (n - 1) * m * red(s) + m * (s / copy);
    return Math.max(Math.max(sends, firstNeeded) + fold, lastArrival + (n - 1) * red(s));
  }

  /** When the {@code q}-th of a rank's messages arrives: sent at CPU pace, queued on the link behind the others. */
  private double arrival(double q, double send, double perMessage, double s) {
    return Math.max(q * send, send + (q - 1) * perMessage) + queued(s, perMessage) + alpha;
  }

  /** Hierarchical over {@code inner} across the nodes of {@code placement} (k ranks on every node). */
  double hierarchical(Algorithm inner, long bytes, Placement placement) {
    int k = placement.evenRanksPerNode();
    int hosts = placement.nodeCount();
    long elements = Math.max(1, bytes / 4);
    if (k == 0) {
      // Leaders fold their node's vectors, all-reduce across nodes, and send the result back.
      int kmax = 1;
      for (int n = 0; n < hosts; n++) {
        kmax = Math.max(kmax, placement.ranksOn(n));
      }
      double v = elements * 4.0;
      double local = (kmax - 1) * (red(v) + localAlpha) + (kmax - 1) * (cpy(v) + localAlpha);
      return local + flat(inner, hosts, v, 1);
    }
    int seg = segmentBytes / 4;
    AllReduceAlgorithm impl = AlgorithmSelector.implementation(inner);
    long piece = Math.min(impl.passElements(hosts, seg), (long) HierarchicalAllReduce.PIECE_SEGMENTS * seg * hosts);
    long block = Blocks.length((int) Math.min(elements, Integer.MAX_VALUE), k, 0);
    long pieces = Math.max(1, (block + piece - 1) / piece);
    long last = block - (pieces - 1) * piece;
    // A vector shorter than k leaves some blocks empty: only the others' inner groups use the link.
    int groups = (int) Math.min(k, elements);
    double full = pieces > 1 ? hierarchicalPiece(inner, hosts, k, groups, piece * 4.0) : 0;
    return (pieces - 1) * full + hierarchicalPiece(inner, hosts, k, groups, Math.max(1, last) * 4.0);
  }

  /**
   * One piece of each rank's block: its k-1 in-place reads, the inner all-reduce across hosts ({@code groups}
   * of them sharing each host's link), k-1 copies.
   */
  private double hierarchicalPiece(Algorithm inner, int hosts, int k, int groups, double pieceBytes) {
    double local = (k - 1) * (overhead + red(pieceBytes)) + (k - 1) * (overhead + cpy(pieceBytes)) + 2 * localAlpha;
    return local + (hosts > 1 ? flat(inner, hosts, pieceBytes, groups) : 0);
  }

  private double flat(Algorithm a, int n, double bytes, int flowsPerHost) {
    switch (a) {
      case RING:
        return ringShared(n, bytes, flowsPerHost);
      case HALVING_DOUBLING:
        return halvingDoubling(n, (long) bytes, 1, flowsPerHost);
      case DIRECT:
        return direct(n, (long) bytes, 1, flowsPerHost);
      case RECURSIVE_DOUBLING:
        return recursiveDoubling(n, (long) bytes, 1, flowsPerHost);
      default:
        throw new IllegalArgumentException("no inner cost for " + a);
    }
  }

  /** One ring pass of {@code bytes} across hosts whose links {@code flows} such rings share. */
  private double ringShared(int n, double bytes, int flows) {
    RingChain ring = new RingChain(this, 1, true, flows, segmentBytes);
    ring.pass(2 * (n - 1), n - 1, bytes / n);
    return ring.finish();
  }
}
