package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.api.Blocks;

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
 * Long vectors run the three phases piece by piece: piece q of every block goes through phases 1, 2 and 3
 * before piece q+1 starts, so each phase reads what the one before it has just written while it is still in
 * the cache, and what is in flight between processes stays within one ring pass (see RingAllReduce). Steps:
 * phase 1 of piece q is q * stride, phase 2 runs from q * stride + 1, phase 3 is SHARE_STEP + q.
 *
 * Processes with different numbers of ranks: the lowest rank of each process (its leader) folds in the
 * others' whole vectors, the leaders all-reduce across processes, and each leader sends the result back.
 *
 * Phases 1 and 3 stay inside a process: a rank reads the other local ranks' blocks in place when the
 * vectors are plain arrays (Links.sendShared), else frames are handed over in memory. Each block is folded by exactly
 * one rank per phase and copied to the others, so every rank ends with the same bits.
 */

/** The two-level all-reduce over a fixed {@link Placement}. */
public final class HierarchicalAllReduce implements AllReduceAlgorithm {
  /** Step of phase 3 (of the first piece); phases 1 and 2 of every piece use steps below this (checked). */
  static final int SHARE_STEP = 1 << 24;
  /** Most segments per rank in one piece of a block (see {@link Tuning#HIERARCHICAL_PIECE_SEGMENTS}). */
  static final int PIECE_SEGMENTS = Tuning.HIERARCHICAL_PIECE_SEGMENTS;

  /** Ranks of each process, ascending, in order of the processes' lowest ranks. */
  private final int[][] members;
  /** Ranks per process if every process holds the same number, else 0 (then the leader form runs). */
  private final int evenK;
  private final AllReduceAlgorithm inner;

  /**
   * @param placement which ranks share a process
   * @param inner the all-reduce run across processes
   */
  public HierarchicalAllReduce(Placement placement, AllReduceAlgorithm inner) {
    int[][] m = new int[placement.nodeCount()][];
    for (int n = 0; n < m.length; n++) {
      m[n] = placement.members(n);
    }
    this.members = m;
    this.evenK = placement.evenRanksPerNode();
    this.inner = inner;
  }

  /** Phases 1 and 2 of piece q from step q * stride; phase 3 of piece q at SHARE_STEP + q. */
  @Override
  public long steps(int ranks, long length, int segmentElements) {
    return SHARE_STEP + (evenK > 0 ? pieces(length, segmentElements) : 1);
  }

  /** Elements of one block in one piece: at most {@link #PIECE_SEGMENTS} segments, and one inner pass. */
  private long pieceElements(int segmentElements) {
    return Math.min(inner.passElements(members.length, segmentElements),
        (long) PIECE_SEGMENTS * segmentElements * members.length);
  }

  private long pieces(long length, int segmentElements) {
    long pass = pieceElements(segmentElements);
    return Math.max(1, (Blocks.length((int) Math.min(length, Integer.MAX_VALUE), evenK, 0) + pass - 1) / pass);
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
    int nodes = members.length;
    int[] peers = new int[nodes];
    for (int n = 0; n < nodes; n++) {
      peers[n] = members[n][i];
    }
    // The three phases run piece by piece (the same piece of every block at once), so that what the phase
    // across processes sends was just written by the reduce-scatter in this process, and what the all-gather
    // reads was just received: each piece is read while it is still in the cache. A piece is one pass of the
    // ring across processes (which then runs a single pass per piece); every block has the same number of
    // pieces (the last ones of shorter blocks may be empty).
    int seg = links.segmentElements();
    long pass = pieceElements(seg);
    int pieces = (int) pieces(len, seg);
    // Phase 1 of a piece takes one step, the inner all-reduce of phase 2 as many as it says for a piece.
    long stride = 1 + inner.steps(nodes, Math.min(pass, Blocks.length(len, k, 0)), seg);
    if (pieces * stride >= SHARE_STEP) {
      throw new IllegalStateException(pieces + " pieces of " + stride + " steps do not fit below step " + SHARE_STEP);
    }
    SubgroupLinks across = nodes > 1 ? new SubgroupLinks(links, peers, 1, 0, 0) : null;
    for (int q = 0; q < pieces; q++) {
      int offI = pieceOffset(len, k, i, q, pass);
      int cntI = pieceLength(len, k, i, q, pass);
      reduceScatterInProcess(links, local, i, (int) (q * stride), q, pass);
      // An empty piece (a vector shorter than k leaves blocks empty, shorter blocks run out of pieces first) is
      // empty on every process alike: its inner group has nothing to exchange.
      if (cntI > 0) {
        if (nodes > 1) {
          // What this rank sends must equal its own copy (DIRECT folds its own copy in): rounded where it moves.
          links.roundToWireOnMove(offI, cntI);
          inner.allReduce(across.window((int) (q * stride + 1), offI, cntI));
        }
        // The ranks of this process copy the piece as it stands.
        links.settleWire(offI, cntI);
      }
      allGatherInProcess(links, local, i, SHARE_STEP + q, q, pass);
    }
    // Block i must stay as it is until the ranks of this process have read it.
    links.awaitShared();
  }

  private static int pieceOffset(int len, int k, int block, int q, long pass) {
    return (int) (Blocks.offset(len, k, block) + Math.min(q * pass, Blocks.length(len, k, block)));
  }

  private static int pieceLength(int len, int k, int block, int q, long pass) {
    int n = Blocks.length(len, k, block);
    return (int) (Math.min((q + 1) * pass, n) - Math.min(q * pass, n));
  }

  /** Piece q of every block j goes to local rank j, which folds the k copies of its own piece in local-rank order. */
  private static void reduceScatterInProcess(Links links, int[] local, int i, int step, int q, long pass) {
    int len = links.length();
    int k = local.length;
    // Ranks of one process read each other's blocks in place when they can (no copy into frames); the fold
    // order per element is the same either way (local ranks in order), so the bits are too.
    boolean share = links.canShare();
    for (int d = 1; d < k; d++) {
      int j = (i + d) % k;
      if (share) {
        links.sendShared(local[j], step, pieceOffset(len, k, j, q, pass), pieceLength(len, k, j, q, pass));
      } else {
        links.send(local[j], step, pieceOffset(len, k, j, q, pass), pieceLength(len, k, j, q, pass));
      }
    }
    int off = pieceOffset(len, k, i, q, pass);
    int cnt = pieceLength(len, k, i, q, pass);
    if (share) {
      for (int j = 0; j < k; j++) {
        if (j != i) {
          links.recvReduce(local[j], step, off, cnt);
        }
      }
      return;
    }
    int seg = links.segmentElements();
    int segments = links.segmentsOf(cnt);
    for (int s = 0; s < segments; s++) {
      int so = off + s * seg;
      int sn = Math.min(seg, cnt - s * seg);
      for (int j = 0; j < k; j++) {
        if (j != i) {
          links.recvReduce(local[j], step, so, sn);
        }
      }
    }
  }

  /** Local rank i hands its final piece q to the others and copies theirs. */
  private static void allGatherInProcess(Links links, int[] local, int i, int step, int q, long pass) {
    int len = links.length();
    int k = local.length;
    int off = pieceOffset(len, k, i, q, pass);
    int cnt = pieceLength(len, k, i, q, pass);
    boolean share = links.canShare();
    for (int d = 1; d < k; d++) {
      if (share) {
        links.sendShared(local[(i + d) % k], step, off, cnt);
      } else {
        links.send(local[(i + d) % k], step, off, cnt);
      }
    }
    for (int d = 1; d < k; d++) {
      int j = (i + k - d) % k;
      links.recvCopy(local[j], step, pieceOffset(len, k, j, q, pass), pieceLength(len, k, j, q, pass));
    }
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
      if (1 + inner.steps(members.length, len, links.segmentElements()) >= SHARE_STEP) {
        throw new IllegalStateException("the all-reduce across processes takes more steps than fit below "
            + SHARE_STEP);
      }
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

  /** The in-process phases read the local ranks' vectors where they lie. */
  @Override
  public boolean readsPeersInPlace() {
    return true;
  }
}
