package io.sparkcollective.core.algorithm;

/*
 * Recursive doubling all-reduce: log2 P steps, each rank exchanging its whole vector with one partner.
 *
 *   P = largest power of two <= N, R = N - P "extra" ranks.
 *
 *   fold (step 0):        ranks 0..2R-1 pair up (2i, 2i+1): 2i sends its vector to 2i+1, which combines it
 *                         and takes virtual rank i; 2i sits out. The other ranks renumber on (as in
 *                         halving-doubling).
 *   doubling (steps 1..L, L = log2 P), mask = 1, 2, ..., P/2: partner = vrank ^ mask; both send their whole
 *                         vector and combine the other's. After the step with mask m every rank holds the
 *                         combination of its block of 2m virtual ranks:
 *                           step 1:  [0 1] [2 3] [4 5] [6 7]
 *                           step 2:  [0 1 2 3] [4 5 6 7]
 *                           step 3:  [0 1 2 3 4 5 6 7]
 *   unfold (step L+1):    2i+1 sends the result to 2i.
 *
 * The same bits on every rank: both partners of a step hold the same two operands (by induction, every rank of
 * a block holds the same bits of that block's combination) and apply the operator in the same order, the lower
 * block's value first: the rank of the lower block combines what it receives into its own vector; the rank of
 * the upper block stashes its own segment, copies the received one in and combines its stashed one after it
 * (as DIRECT folds its own contribution in rank order). The fold is computed once and copied. (Where two NaNs
 * meet, which payload survives is the JVM's: see README "Semantics".)
 *
 * Against halving-doubling: half the steps (L + 2 instead of 2L + 2) for L times the bytes per rank
 * (the whole vector each step instead of 2(P-1)/P of it over all steps): the small-message algorithm when
 * DIRECT's N - 1 messages per rank cost more than L latencies, at large N or on cores that many concurrent
 * messages overload.
 */

/** Latency-oriented for small vectors: log2 N steps of one message each way per rank. */
public final class RecursiveDoublingAllReduce implements AllReduceAlgorithm {
  public static final RecursiveDoublingAllReduce INSTANCE = new RecursiveDoublingAllReduce();

  /** Fold (step 0), L doubling steps, unfold (step L+1), L = log2 of the power-of-two part. */
  @Override
  public long steps(int ranks, long length, int segmentElements) {
    return ranks < 2 ? 0 : Integer.numberOfTrailingZeros(Integer.highestOneBit(ranks)) + 2L;
  }

  @Override
  public void allReduce(Links links) {
    int n = links.size();
    int len = links.length();
    int p = Integer.highestOneBit(n);
    int extra = n - p;
    int levels = Integer.numberOfTrailingZeros(p);
    int unfoldStep = levels + 1;

    int vrank = HalvingDoublingAllReduce.foldIn(links, extra, unfoldStep);
    if (vrank < 0) {
      return;
    }

    int seg = links.segmentElements();
    int segments = links.segmentsOf(len);
    int step = 1;
    for (int mask = 1; mask < p; mask <<= 1, step++) {
      int partner = HalvingDoublingAllReduce.realRank(vrank ^ mask, extra);
      boolean last = mask << 1 == p;
      links.send(partner, step, 0, len);
      if ((vrank & mask) == 0) {
        // The lower block's value is this rank's own: the received one is combined after it.
        if (last) {
          links.recvReduceFinal(partner, step, 0, len);
        } else {
          links.recvReduce(partner, step, 0, len);
        }
        continue;
      }
      // The lower block's value arrives: it goes first, this rank's own (stashed) after it.
      for (int k = 0; k < segments; k++) {
        int off = k * seg;
        int cnt = Math.min(seg, len - off);
        links.stash(off, cnt);
        links.recvCopy(partner, step, off, cnt);
        if (last) {
          links.reduceFromStashFinal(off, cnt);
        } else {
          links.reduceFromStash(off, cnt);
        }
      }
    }
    HalvingDoublingAllReduce.unfold(links, extra, unfoldStep);
  }
}
