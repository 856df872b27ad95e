package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.Blocks;

/*
 * Closed forms of what each algorithm costs one rank, in the terms of the simulator's network model
 * (core simulation.NetworkModel), for AUTO to compare them when it knows the link:
 *
 *   send a segment of s bytes     snd(s) = o + s/copy        (CPU: into a frame)
 *   on the wire                   w(s)   = (s + header) / (link rate / flows sharing the host's link)
 *   receive and combine           red(s) = o + s/reduce      receive and copy   cpy(s) = o + s/copy
 *   latency per message           alpha between hosts, local between ranks of one host
 *
 *   ring pass, m segments a chunk, 2(N-1) steps:  the first segment crosses 2(N-1) hops, the others follow one
 *                                  per max(snd + red, w); or the rank handles 2(N-1)m segments back to back
 *   halving-doubling step:         send every segment of the half, then receive and combine the partner's
 *                                  (a fold and an unfold of the whole vector before and after for the extra ranks)
 *   direct:                        send (N-1) copies, then fold N-1 contributions per segment in rank order
 *   hierarchical, per piece:       k-1 in-place reads, the inner all-reduce across hosts on 1/k of the piece
 *                                  (the k inner groups share each host's link), k-1 in-place copies
 *
 * The forms follow the simulated schedules closely (within a few percent where one resource dominates), which
 * is all AUTO needs: near a crossover any of the close candidates is good.
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
      case RING_2D:
        return ring2d(n, bytes, twoLevel ? k : 1);
      default:
        throw new IllegalArgumentException("no cost for " + choice);
    }
  }

  private double snd(double s) {
    return overhead + s / copy;
  }

  private double red(double s) {
    return overhead + s / reduce;
  }

  private double cpy(double s) {
    return overhead + s / copy;
  }

  private double wire(double s, int flows) {
    return (s + header) * flows / link;
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
    long passes = Math.max(1, (elements + pass - 1) / pass);
    long last = elements - (passes - 1) * pass;
    double full = passes > 1 ? ringPass(n, pass * 4, k) : 0;
    return (passes - 1) * full + ringPass(n, last * 4, k);
  }

  private double ringPass(int n, double bytes, int k) {
    return chain(2.0 * (n - 1), bytes / n, 1.0 / k, 1);
  }

  /**
   * The two-dimensional ring on {@code n} ranks, {@code k} consecutive ones per host: per piece of one ring
   * pass, the row's reduce-scatter and all-gather (a-1 steps each over chunks of 1/a of the piece) and the
   * column's ring (2(b-1) steps over chunks of 1/n). Rows of consecutive ranks stay in a host when a host holds
   * whole rows; columns then cross hosts, the host's k columns sharing its link.
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
    boolean rowsInHosts = k > 1 && k % a == 0;
    double rowRemote = k == 1 ? 1 : rowsInHosts ? 0 : 1.0 / k;
    int columnFlows = rowsInHosts ? k / a * a : 1;
    double full = passes > 1 ? ring2dPiece(a, b, pass * 4.0, rowRemote, columnFlows) : 0;
    return (passes - 1) * full + ring2dPiece(a, b, last * 4.0, rowRemote, columnFlows);
  }

  private double ring2dPiece(int a, int b, double bytes, double rowRemote, int columnFlows) {
    return chain(2.0 * (a - 1), bytes / a, rowRemote, 1) + chain(2.0 * (b - 1), bytes / (a * b), 1, columnFlows);
  }

  /**
   * {@code hops} ring steps over chunks of {@code chunk} bytes, a share {@code remote} of them across hosts whose
   * links {@code flows} such chains share: the first segment's way through every hop, or the segments back to
   * back, whichever is longer.
   */
  private double chain(double hops, double chunk, double remote, int flows) {
    int m = segments(chunk);
    double s = chunk / m;
    double cpu = snd(s) + (red(s) + cpy(s)) / 2;
    double w = wire(s, flows);
    double remoteHops = hops * remote;
    double latency = hops * cpu + remoteHops * (wire(s, 1) + alpha) + (hops - remoteHops) * localAlpha;
    double perSegment = remote > 0 ? Math.max(cpu, w) : cpu;
    return Math.max(latency + (m - 1) * perSegment, hops * m * perSegment + latency / Math.max(1, hops) - perSegment);
  }

  /**
   * One exchange: send {@code bytes} to a partner in segments, then receive and combine (or copy) as many from
   * it; {@code flows} segments share the host's link at once (none when the partner is local), of which
   * {@code inStep} start together.
   */
  private double exchange(double bytes, boolean remote, int flows, int inStep, boolean combine) {
    int m = segments(bytes);
    double s = bytes / m;
    double send = snd(s);
    double recv = combine ? red(s) : cpy(s);
    double w = remote ? wire(s, flows) : 0;
    double lat = remote ? alpha : localAlpha;
    double pace = Math.max(send, w);
    double first = send + lat + (remote ? Math.max(wire(s, inStep), queued(s, w)) : 0);
    double lastArrival = first + (m - 1) * pace;
    return Math.max(Math.max(m * send + m * recv, first + m * recv), lastArrival + recv);
  }

  /**
   * The wire time of a rank's first segment when the link's flows together take {@code w} per segment: ranks
   * drift apart by about a latency (they leave the previous step at different times), which hides that much of
   * their queueing behind each other; never less than the segment's own wire time.
   */
  private double queued(double s, double w) {
    return Math.max(wire(s, 1), w - alpha);
  }

  /** One-way transfer of {@code bytes} (fold, unfold): the receiver's side. */
  private double transfer(double bytes, boolean remote, int flows, boolean combine) {
    int m = segments(bytes);
    double s = bytes / m;
    double send = snd(s);
    double recv = combine ? red(s) : cpy(s);
    double w = remote ? wire(s, flows) : 0;
    double lat = remote ? alpha : localAlpha;
    double first = send + w + lat;
    double lastArrival = first + (m - 1) * Math.max(send, w);
    return Math.max(first + m * recv, lastArrival + recv);
  }

  /**
   * Halving-doubling on {@code n} ranks, {@code k} consecutive ones per host; {@code flowsPerHost} other groups
   * run the same at once on each host's link (hierarchical's inner groups).
   */
  double halvingDoubling(int n, long bytes, int k, int flowsPerHost) {
    double v = Math.max(4, bytes / 4 * 4);
    int p = Integer.highestOneBit(n);
    int extra = n - p;
    double t = 0;
    if (extra > 0) {
      // Fold and unfold pair ranks 2i and 2i+1: local when they share a host.
      // The receiving rank's first halving partner, not folded, sends its half at once: over a host's link that
      // half shares the ingress with the fold.
      boolean remote = k == 1;
      boolean shared = remote && p > 1;
      t += transfer(shared ? 1.5 * v : v, remote, flowsPerHost, true) - (shared ? 0.5 * v / reduce : 0)
          + transfer(v, remote, flowsPerHost, false);
    }
    double range = v;
    int levels = Integer.numberOfTrailingZeros(p);
    double[] sizes = new double[levels];
    for (int i = 0; i < levels; i++) {
      range /= 2;
      sizes[i] = range;
    }
    // A host's ranks start the first step across hosts together, so their segments queue behind each other on
    // the link; after it they leave each step one segment apart (halving: the next segment is smaller, so no
    // longer in each other's way), and doubling's growing segments catch up again.
    boolean first = true;
    for (int i = 0; i < levels; i++) {
      int mask = p >> (i + 1);
      boolean remote = mask >= k;
      t += exchange(sizes[i], remote, remote ? k * flowsPerHost : 1, remote && first ? k : 1, true);
      first &= !remote;
    }
    for (int i = levels - 1; i >= 0; i--) {
      int mask = p >> (i + 1);
      boolean remote = mask >= k;
      t += exchange(sizes[i], remote, remote ? k * flowsPerHost : 1, remote ? k : 1, false);
    }
    return t;
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
    double pieceBytes = Math.min(block, piece) * 4.0;
    double local = (k - 1) * (overhead + red(pieceBytes)) + (k - 1) * (overhead + cpy(pieceBytes)) + 2 * localAlpha;
    double across = hosts > 1 ? flat(inner, hosts, pieceBytes, k) : 0;
    return pieces * (local + across);
  }

  private double flat(Algorithm a, int n, double bytes, int flowsPerHost) {
    switch (a) {
      case RING:
        return ringShared(n, bytes, flowsPerHost);
      case HALVING_DOUBLING:
        return halvingDoubling(n, (long) bytes, 1, flowsPerHost);
      case DIRECT:
        return direct(n, (long) bytes, 1, flowsPerHost);
      default:
        throw new IllegalArgumentException("no inner cost for " + a);
    }
  }

  /** One ring pass of {@code bytes} across hosts whose links {@code flows} such rings share. */
  private double ringShared(int n, double bytes, int flows) {
    return chain(2.0 * (n - 1), bytes / n, 1, flows);
  }
}
