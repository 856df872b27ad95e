package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.api.Blocks;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/*
 * Two-level all-reduce for groups whose ranks share processes (several barrier tasks per executor).
 *
 * Every process holds k ranks (the same k everywhere): the vector is cut into k blocks, one per local rank.
 *
 *   1. reduce-scatter in the process:  local rank i sends block j to local rank j, and folds the k copies
 *                                       of block i in local-rank order                      (step 0)
 *   2. across processes:               the ranks holding block i (local rank i of every process) all-reduce
 *                                       it among themselves: k independent all-reduces run at once, each on
 *                                       1/k of the vector (RING, DIRECT or HD by size)       (steps 1..)
 *   3. all-gather in the process:      local rank i sends its final block i to the others   (step SHARE)
 *
 * Processes with different numbers of ranks: the lowest rank of each process (its leader) folds in the
 * others' whole vectors, the leaders all-reduce across processes, and each leader sends the result back.
 *
 * Phases 1 and 3 stay inside a process: a rank reads the other local ranks' blocks in place when the
 * vectors are plain arrays (Links.sendShared), else frames are handed over in memory. Each block is folded by exactly
 * one rank per phase and copied to the others, so every rank ends with the same bits.
 */

/** The two-level all-reduce over a fixed rank-to-process map. */
public final class HierarchicalAllReduce implements AllReduceAlgorithm {
  /** Step of phase 3; the inner all-reduces use steps 1 to well below this. */
  static final int SHARE_STEP = 1 << 24;

  /** Ranks of each process, ascending, in order of the processes' lowest ranks. */
  private final int[][] members;
  /** Ranks per process if every process holds the same number, else 0 (then the leader form runs). */
  private final int evenK;
  private final AllReduceAlgorithm inner;

  /**
   * @param nodes process of every rank (ranks with equal values share a process)
   * @param inner the all-reduce run across processes
   */
  public HierarchicalAllReduce(int[] nodes, AllReduceAlgorithm inner) {
    this.members = members(nodes);
    this.evenK = ranksPerNode(members);
    this.inner = inner;
  }

  private static int[][] members(int[] nodes) {
    Map<Integer, List<Integer>> byNode = new TreeMap<>();
    for (int r = 0; r < nodes.length; r++) {
      byNode.computeIfAbsent(nodes[r], n -> new ArrayList<>()).add(r);
    }
    List<int[]> out = new ArrayList<>();
    for (List<Integer> ranks : byNode.values()) {
      out.add(ranks.stream().mapToInt(Integer::intValue).toArray());
    }
    out.sort((a, b) -> Integer.compare(a[0], b[0]));
    return out.toArray(new int[0][]);
  }

  /** Number of distinct processes. */
  public static int nodeCount(int[] nodes) {
    return members(nodes).length;
  }

  /** Ranks per process when every process holds the same number, else 0. */
  public static int ranksPerNode(int[] nodes) {
    return ranksPerNode(members(nodes));
  }

  private static int ranksPerNode(int[][] members) {
    int k = members[0].length;
    for (int[] m : members) {
      k = m.length == k ? k : 0;
    }
    return k;
  }

  @Override
  public void allReduce(Links links) {
    if (evenK > 0) {
      sharded(links);
    } else {
      viaLeaders(links);
    }
  }

  private int[] localOf(int rank) {
    for (int[] m : members) {
      for (int r : m) {
        if (r == rank) {
          return m;
        }
      }
    }
    throw new IllegalStateException("rank " + rank + " has no process");
  }

  private void sharded(Links links) {
    int me = links.rank();
    int len = links.length();
    int k = evenK;
    int[] local = localOf(me);
    int i = indexOf(local, me);
    int off = Blocks.offset(len, k, i);
    int cnt = Blocks.length(len, k, i);
    // Ranks of one process read each other's blocks in place when they can (no copy into frames); the fold
    // order per element is the same either way (local ranks in order), so the bits are too.
    boolean share = links.canShare();
    for (int d = 1; d < k; d++) {
      int j = (i + d) % k;
      if (share) {
        links.sendShared(local[j], 0, Blocks.offset(len, k, j), Blocks.length(len, k, j));
      } else {
        links.send(local[j], 0, Blocks.offset(len, k, j), Blocks.length(len, k, j));
      }
    }
    if (share) {
      for (int j = 0; j < k; j++) {
        if (j != i) {
          links.recvReduce(local[j], 0, off, cnt);
        }
      }
    } else {
      int seg = links.segmentElements();
      int segments = links.segmentsOf(cnt);
      for (int s = 0; s < segments; s++) {
        int so = off + s * seg;
        int sn = Math.min(seg, cnt - s * seg);
        for (int j = 0; j < k; j++) {
          if (j != i) {
            links.recvReduce(local[j], 0, so, sn);
          }
        }
      }
    }
    if (members.length > 1) {
      int[] peers = new int[members.length];
      for (int n = 0; n < members.length; n++) {
        peers[n] = members[n][i];
      }
      // What this rank sends must equal its own copy (DIRECT folds its own copy in).
      links.roundToWire(off, cnt);
      inner.allReduce(new SubgroupLinks(links, peers, 1, off, cnt));
    }
    for (int d = 1; d < k; d++) {
      if (share) {
        links.sendShared(local[(i + d) % k], SHARE_STEP, off, cnt);
      } else {
        links.send(local[(i + d) % k], SHARE_STEP, off, cnt);
      }
    }
    for (int d = 1; d < k; d++) {
      int j = (i + k - d) % k;
      links.recvCopy(local[j], SHARE_STEP, Blocks.offset(len, k, j), Blocks.length(len, k, j));
    }
    // Block i must stay as it is until the ranks of this process have read it.
    links.awaitShared();
  }

  private void viaLeaders(Links links) {
    int me = links.rank();
    int[] local = localOf(me);
    int leader = local[0];
    int len = links.length();
    if (me != leader) {
      links.send(leader, 0, 0, len);
      links.recvCopy(leader, SHARE_STEP, 0, len);
      return;
    }
    int seg = links.segmentElements();
    int segments = links.segmentsOf(len);
    for (int s = 0; s < segments; s++) {
      int off = s * seg;
      int cnt = Math.min(seg, len - off);
      for (int j = 1; j < local.length; j++) {
        links.recvReduce(local[j], 0, off, cnt);
      }
    }
    if (members.length > 1) {
      int[] leaders = new int[members.length];
      for (int n = 0; n < members.length; n++) {
        leaders[n] = members[n][0];
      }
      links.roundToWire(0, len);
      inner.allReduce(new SubgroupLinks(links, leaders, 1));
    }
    for (int j = 1; j < local.length; j++) {
      links.send(local[j], SHARE_STEP, 0, len);
    }
  }

  private static int indexOf(int[] a, int v) {
    for (int x = 0; x < a.length; x++) {
      if (a[x] == v) {
        return x;
      }
    }
    return -1;
  }
}
