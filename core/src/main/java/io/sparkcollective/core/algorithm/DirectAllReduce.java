package io.sparkcollective.core.algorithm;

/*
 * Direct (mesh) all-reduce: one step, every rank sends its whole vector to every peer.
 *
 *   rank r:  send v_r -> every p != r            (step 0, segment by segment)
 *            for each segment:  acc = v_0 (op) v_1 (op) ... (op) v_{N-1}
 *
 * Every rank folds the N contributions in the same rank order (its own from a stashed copy), so the
 * results are bitwise identical even for non-associative floating-point sums.
 */

/** Latency-optimal for small vectors: one message time, at the price of (N-1) times the bytes. */
public final class DirectAllReduce implements AllReduceAlgorithm {
  public static final DirectAllReduce INSTANCE = new DirectAllReduce();

  /** Everything is step 0. */
  @Override
  public long steps(int ranks, long length, int segmentElements) {
    return ranks < 2 ? 0 : 1;
  }

  @Override
  public void allReduce(Links links) {
    int n = links.size();
    int r = links.rank();
    int len = links.length();
    int seg = links.segmentElements();
    int segments = links.segmentsOf(len);
    for (int d = 1; d < n; d++) {
      int peer = (r + d) % n;
      links.send(peer, 0, 0, len);
    }
    for (int k = 0; k < segments; k++) {
      int off = k * seg;
      int cnt = Math.min(seg, len - off);
      if (r != 0) {
        links.stash(off, cnt);
      }
      for (int p = 0; p < n; p++) {
        if (p == 0) {
          if (r != 0) {
            links.recvCopy(0, 0, off, cnt);
          }
        } else if (p == r) {
          if (p == n - 1) {
            links.reduceFromStashFinal(off, cnt);
          } else {
            links.reduceFromStash(off, cnt);
          }
        } else if (p == n - 1) {
          links.recvReduceFinal(p, 0, off, cnt);
        } else {
          links.recvReduce(p, 0, off, cnt);
        }
      }
    }
  }
}
