package io.sparkcollective.core.algorithm;

/*
 * Two-level all-reduce for groups whose ranks share processes (several barrier tasks per executor).
 *
 *   nodes:  node(r) for every rank r; the leader of a node is its lowest rank.
 *   1. reduce in the node:    every non-leader sends its vector to its leader            (step 0)
 *                             the leader folds them in, in rank order, segment by segment
 *   2. across nodes:          the leaders run an all-reduce among themselves              (steps 1..)
 *                             (a subgroup of one leader per node; RING, DIRECT or HD)
 *   3. share in the node:     each leader sends the result to its non-leaders            (step BROADCAST)
 *
 * Steps 1 and 3 stay inside a process (the transport hands frames over in memory), so only one rank per
 * process talks over the network, with 1/k of the connections and k times fewer messages. Every rank ends
 * with its leader's bits, and the leaders' inner all-reduce gives them all the same bits.
 */

/** The two-level all-reduce over a fixed rank-to-node map. */
public final class HierarchicalAllReduce implements AllReduceAlgorithm {
  /** Step of phase 3; the inner all-reduce uses steps 1 to well below this. */
  static final int BROADCAST_STEP = 1 << 24;

  private final int[] nodes;
  private final int[] leaders;
  private final AllReduceAlgorithm inner;

  /**
   * @param nodes node of every rank (ranks with equal values share a process)
   * @param inner the all-reduce the leaders run among themselves
   */
  public HierarchicalAllReduce(int[] nodes, AllReduceAlgorithm inner) {
    this.nodes = nodes.clone();
    this.leaders = leaders(nodes);
    this.inner = inner;
  }

  /** The lowest rank of every node, in increasing order. */
  public static int[] leaders(int[] nodes) {
    java.util.Map<Integer, Integer> first = new java.util.TreeMap<>();
    for (int r = nodes.length - 1; r >= 0; r--) {
      first.put(nodes[r], r);
    }
    return first.values().stream().mapToInt(Integer::intValue).sorted().toArray();
  }

  /** Number of distinct nodes. */
  public static int nodeCount(int[] nodes) {
    return leaders(nodes).length;
  }

  @Override
  public void allReduce(Links links) {
    int me = links.rank();
    int leader = leaderOf(me);
    int len = links.length();
    if (me != leader) {
      links.send(leader, 0, 0, len);
      links.recvCopy(leader, BROADCAST_STEP, 0, len);
      return;
    }
    int seg = links.segmentElements();
    int segments = links.segmentsOf(len);
    for (int k = 0; k < segments; k++) {
      int off = k * seg;
      int cnt = Math.min(seg, len - off);
      for (int r = me + 1; r < nodes.length; r++) {
        if (nodes[r] == nodes[me]) {
          links.recvReduce(r, 0, off, cnt);
        }
      }
    }
    if (leaders.length > 1) {
      // The leader's partial sum must equal what its peers receive (DIRECT folds its own copy in).
      links.roundToWire(0, len);
      inner.allReduce(new SubgroupLinks(links, leaders, 1));
    }
    for (int r = me + 1; r < nodes.length; r++) {
      if (nodes[r] == nodes[me]) {
        links.send(r, BROADCAST_STEP, 0, len);
      }
    }
  }

  private int leaderOf(int rank) {
    for (int r = 0; r <= rank; r++) {
      if (nodes[r] == nodes[rank]) {
        return r;
      }
    }
    throw new IllegalStateException("unreachable");
  }
}
