package io.sparkcollective.core.algorithm;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where a group's ranks live: which ranks share a process ("node": ranks of one node exchange data in
 * memory). A value: made once per group from the transport's rank-to-node map, compared by content.
 */
public final class Placement {
  /** Ranks of each node, ascending, in order of the nodes' lowest ranks. */
  private final int[][] members;
  private final int[] nodeOf;
  private final int ranks;

  private Placement(int[][] members, int ranks) {
    this.members = members;
    this.ranks = ranks;
    this.nodeOf = new int[ranks];
    for (int n = 0; n < members.length; n++) {
      for (int r : members[n]) {
        nodeOf[r] = n;
      }
    }
  }

  /**
   * The placement of {@code node.length} ranks where {@code node[r]} names rank r's node (any integers:
   * equal values share a node). Nodes are numbered anew from 0 in order of their lowest ranks.
   */
  public static Placement of(int[] node) {
    if (node.length == 0) {
      throw new IllegalArgumentException("a placement of no ranks");
    }
    Map<Integer, List<Integer>> byNode = new TreeMap<>();
    for (int r = 0; r < node.length; r++) {
      byNode.computeIfAbsent(node[r], n -> new ArrayList<>()).add(r);
    }
    List<int[]> out = new ArrayList<>();
    for (List<Integer> ranks : byNode.values()) {
      out.add(ranks.stream().mapToInt(Integer::intValue).toArray());
    }
    out.sort((a, b) -> Integer.compare(a[0], b[0]));
    return new Placement(out.toArray(new int[0][]), node.length);
  }

  /** Every rank on a node of its own. */
  public static Placement flat(int ranks) {
    int[] node = new int[ranks];
    Arrays.setAll(node, r -> r);
    return of(node);
  }

  public int ranks() {
    return ranks;
  }

  public int nodeCount() {
    return members.length;
  }

  /** The node of {@code rank}, from 0, nodes numbered in order of their lowest ranks. */
  public int nodeOf(int rank) {
    return nodeOf[rank];
  }

  /** Ranks of node {@code n}, ascending (a copy). */
  public int[] members(int n) {
    return members[n].clone();
  }

  /** Ranks on node {@code n}. */
  public int ranksOn(int n) {
    return members[n].length;
  }

  /** Ranks per node when every node holds the same number, else 0. */
  public int evenRanksPerNode() {
    int k = members[0].length;
    for (int[] m : members) {
      if (m.length != k) {
        return 0;
      }
    }
    return k;
  }

  /** Whether every node's ranks are consecutive (a block of the group's order). */
  public boolean consecutive() {
    for (int[] m : members) {
      if (m[m.length - 1] - m[0] != m.length - 1) {
        return false;
      }
    }
    return true;
  }

  /** Whether some node holds several ranks of a group that spans several nodes (two levels pay off). */
  public boolean isTwoLevel() {
    return members.length > 1 && members.length < ranks;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Placement && Arrays.deepEquals(members, ((Placement) o).members);
  }

  @Override
  public int hashCode() {
    return Arrays.deepHashCode(members);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("Placement{");
    for (int n = 0; n < members.length; n++) {
      s.append(n == 0 ? "" : " | ").append(Arrays.toString(members[n]));
    }
    return s.append('}').toString();
  }
}
