package io.sparkcollective.core.algorithm;

/*
 * Recursive halving-doubling all-reduce (Rabenseifner), for any group size N.
 *
 *   P = largest power of two <= N, R = N - P "extra" ranks.
 *
 *   fold (step 0):      ranks 0..2R-1 pair up (2i, 2i+1): 2i sends its whole vector to 2i+1, which
 *                       reduces it; 2i then sits out. The other P ranks renumber 0..P-1 ("virtual rank").
 *   halving (steps 1..L, L = log2 P), mask = P/2, P/4, ..., 1:
 *                       partner = vrank ^ mask; both hold the same range [lo, hi) and split it at the
 *                       middle; the one without the mask bit keeps the low half. Send the other half,
 *                       receive and reduce the kept half. Ranges halve:
 *                         [..........................]   step 1
 *                         [............][.............]   step 2 ...
 *   doubling (steps L+1..2L), mask = 1, 2, ..., P/2: the same pairs in reverse, exchanging the reduced
 *                       ranges and copying, until every one of the P ranks has the whole result.
 *   unfold (step 2L+1): 2i+1 sends the result to 2i.
 *
 * Each element is reduced on one rank at each step and then only copied, so all ranks end bitwise equal.
 */

/** Log-latency and bandwidth-optimal for powers of two; about twice the bytes for the extra ranks. */
public final class HalvingDoublingAllReduce implements AllReduceAlgorithm {
  public static final HalvingDoublingAllReduce INSTANCE = new HalvingDoublingAllReduce();

  /** Fold (step 0), L halving and L doubling steps, unfold (step 2L+1), L = log2 of the power-of-two part. */
  @Override
  public long steps(int ranks, long length, int segmentElements) {
    return ranks < 2 ? 0 : 2L * Integer.numberOfTrailingZeros(Integer.highestOneBit(ranks)) + 2;
  }

  @Override
  public void allReduce(Links links) {
    int n = links.size();
    int len = links.length();
    int p = Integer.highestOneBit(n);
    int extra = n - p;
    int levels = Integer.numberOfTrailingZeros(p);
    int unfoldStep = 2 * levels + 1;

    int vrank = foldIn(links, extra, unfoldStep);
    if (vrank < 0) {
      return;
    }
    expectDoubling(links, vrank, extra, p, levels);

    int[] los = new int[levels];
    int[] his = new int[levels];
    int lo = 0;
    int hi = len;
    int step = 1;
    for (int mask = p >> 1, i = 0; mask > 0; mask >>= 1, i++, step++) {
      int partner = realRank(vrank ^ mask, extra);
      int mid = lo + (hi - lo) / 2;
      los[i] = lo;
      his[i] = hi;
      // The last halving leaves this rank's final sums.
      boolean last = mask == 1;
      if ((vrank & mask) == 0) {
        links.send(partner, step, mid, hi - mid);
        if (last) {
          links.recvReduceFinal(partner, step, lo, mid - lo);
        } else {
          links.recvReduce(partner, step, lo, mid - lo);
        }
        hi = mid;
      } else {
        links.send(partner, step, lo, mid - lo);
        if (last) {
          links.recvReduceFinal(partner, step, mid, hi - mid);
        } else {
          links.recvReduce(partner, step, mid, hi - mid);
        }
        lo = mid;
      }
    }
    for (int mask = 1, i = levels - 1; mask < p; mask <<= 1, i--, step++) {
      int partner = realRank(vrank ^ mask, extra);
      links.send(partner, step, lo, hi - lo);
      int plo = los[i];
      int phi = his[i];
      if ((vrank & mask) == 0) {
        // This rank kept the low half at this level; the partner holds [hi, phi).
        links.recvCopy(partner, step, hi, phi - hi);
      } else {
        links.recvCopy(partner, step, plo, lo - plo);
      }
      lo = plo;
      hi = phi;
    }
    unfold(links, extra, unfoldStep);
  }

  /**
   * Announces the doubling's copies ({@link Links#expectCopy}) before the halving starts: each partner sends its
   * range as soon as its own halving is done, often before this rank waits for it. The ranges are the ones
   * {@link #allReduce} works out as it goes.
   */
  private static void expectDoubling(Links links, int vrank, int extra, int p, int levels) {
    int[] los = new int[levels];
    int[] his = new int[levels];
    int lo = 0;
    int hi = links.length();
    int i = 0;
    for (int mask = p >> 1; mask > 0; mask >>= 1, i++) {
      int mid = lo + (hi - lo) / 2;
      los[i] = lo;
      his[i] = hi;
      if ((vrank & mask) == 0) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    int step = levels + 1;
    i = levels - 1;
    for (int mask = 1; mask < p; mask <<= 1, i--, step++) {
      int partner = realRank(vrank ^ mask, extra);
      if ((vrank & mask) == 0) {
        links.expectCopy(partner, step, hi, his[i] - hi);
      } else {
        links.expectCopy(partner, step, los[i], lo - los[i]);
      }
      lo = los[i];
      hi = his[i];
    }
  }

  /**
   * The fold of a group that is not a power of two (step 0): ranks 2i, i < {@code extra}, send their vector to
   * 2i+1 and take the result back at {@code unfoldStep}, and get -1 (they are done); 2i+1 combines it and gets
   * virtual rank i; every later rank r gets r - extra.
   */
  static int foldIn(Links links, int extra, int unfoldStep) {
    int r = links.rank();
    int len = links.length();
    if (r >= 2 * extra) {
      return r - extra;
    }
    if ((r & 1) == 0) {
      links.expectCopy(r + 1, unfoldStep, 0, len);
      links.send(r + 1, 0, 0, len);
      links.recvCopy(r + 1, unfoldStep, 0, len);
      return -1;
    }
    links.recvReduce(r - 1, 0, 0, len);
    return r >> 1;
  }

  /** The unfold: each rank 2i+1 of the fold sends the result to 2i. */
  static void unfold(Links links, int extra, int unfoldStep) {
    int r = links.rank();
    if (r < 2 * extra) {
      links.send(r - 1, unfoldStep, 0, links.length());
    }
  }

  /** The real rank of virtual rank {@code vrank} when the first {@code 2 extra} ranks folded in pairs. */
  static int realRank(int vrank, int extra) {
    return vrank < extra ? 2 * vrank + 1 : vrank + extra;
  }
}
