package io.sparkcollective.core.algorithm;

/*
 * Two-dimensional ring all-reduce, for groups too large for one ring's 2(N-1) latencies.
 *
 *   N = a x b ranks, rows of a consecutive ranks (a the divisor of N nearest sqrt(N), a <= b):
 *
 *     row 0:   0    1   ...  a-1          each row's vector cut into a chunks, chunk i ends on column i
 *     row 1:   a   a+1  ... 2a-1
 *     ...
 *
 *   1. ring reduce-scatter along the row     (a-1 steps)       column i holds the row's sum of chunk i
 *   2. ring all-reduce of chunk i down column i (2(b-1) steps)  every rank of column i holds the group's sum
 *   3. ring all-gather along the row         (a-1 steps)       every rank holds every chunk
 *
 * Each rank sends (a-1)/a + 2(b-1)/(ab) + (a-1)/a = 2(N-1)/N of the vector, as the ring does, in
 * 2(a-1) + 2(b-1) steps instead of 2(N-1). Long vectors go through all three phases in pieces of one ring pass
 * (RingAllReduce.passElements), so what is in flight stays as bounded as the ring's. Every element is reduced
 * on one rank per phase and then only copied, so all ranks end bitwise identical.
 */

/** The ring in two dimensions: rows of about sqrt(N) ranks, then columns. */
public final class TwoDimensionalRingAllReduce implements AllReduceAlgorithm {
  public static final TwoDimensionalRingAllReduce INSTANCE = new TwoDimensionalRingAllReduce();

  /**
   * Ranks per row for a group of {@code n}: the divisor a of n with 2 <= a <= n / a nearest sqrt(n), or 0 when
   * there is none (n below 4, or prime): such a group runs the plain ring.
   */
  public static int rowSize(int n) {
    for (int a = (int) Math.sqrt(n); a >= 2; a--) {
      if (n % a == 0) {
        return a;
      }
    }
    return 0;
  }

  @Override
  public long passElements(int ranks, int segmentElements) {
    return RingAllReduce.INSTANCE.passElements(ranks, segmentElements);
  }

  /** Steps of one piece: the row's reduce-scatter, the column's all-reduce, the row's all-gather. */
  private static long stride(int a, int b) {
    return 2L * (a - 1) + 2L * (b - 1);
  }

  @Override
  public long steps(int ranks, long length, int segmentElements) {
    int a = rowSize(ranks);
    if (a == 0) {
      return RingAllReduce.INSTANCE.steps(ranks, length, segmentElements);
    }
    long pass = passElements(ranks, segmentElements);
    long pieces = Math.max(1, (length + pass - 1) / pass);
    return pieces * stride(a, ranks / a);
  }

  @Override
  public void allReduce(Links links) {
    int n = links.size();
    int a = rowSize(n);
    if (a == 0) {
      RingAllReduce.INSTANCE.allReduce(links);
      return;
    }
    int b = n / a;
    int r = links.rank();
    int row = r / a;
    int column = r % a;
    int[] rowMembers = new int[a];
    for (int i = 0; i < a; i++) {
      rowMembers[i] = row * a + i;
    }
    int[] columnMembers = new int[b];
    for (int j = 0; j < b; j++) {
      columnMembers[j] = j * a + column;
    }
    SubgroupLinks along = new SubgroupLinks(links, rowMembers, 0, 0, 0);
    SubgroupLinks down = new SubgroupLinks(links, columnMembers, 0, 0, 0);
    int len = links.length();
    long pass = passElements(n, links.segmentElements());
    long stride = stride(a, b);
    int q = 0;
    for (long off = 0; off < len || (len == 0 && q == 0); off += pass, q++) {
      int pieceOff = (int) off;
      int pieceLen = (int) Math.min(pass, len - off);
      long base = q * stride;
      int[] bounds = Partition.even(pieceLen, a);
      // 1. Steps base .. base+a-2: this rank ends with chunk `column` summed over its row.
      // Not final: the column all-reduce combines each chunk further.
      RingAllReduce.reduceScatter(along.window((int) base, pieceOff, pieceLen), bounds, false, false);
      // 2. Steps base+a-1 .. base+a-1+2(b-1)-1: that chunk summed over the whole group (one ring pass: the chunk
      // is at most a ring pass for b ranks).
      int chunkOff = pieceOff + bounds[column];
      int chunkLen = bounds[column + 1] - bounds[column];
      RingAllReduce.INSTANCE.allReduce(down.window((int) (base + a - 1), chunkOff, chunkLen));
      // 3. The row's all-gather numbers its steps from a-1: shifted to follow phase 2.
      RingAllReduce.allGather(along.window((int) (base + 2L * (b - 1)), pieceOff, pieceLen), bounds, true);
    }
  }
}
