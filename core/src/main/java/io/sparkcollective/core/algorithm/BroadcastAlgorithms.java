package io.sparkcollective.core.algorithm;

/*
 * Broadcast from root.
 *
 *   direct (small):   root -> every other rank, one step.
 *   pipelined chain (large): ranks in the order root, root+1, ..., root-1; each receives segment k from its
 *                     predecessor and forwards it at once, so the time is about one vector transfer plus
 *                     (N-2) segment times, not (N-1) vector transfers.
 */

/** Broadcast algorithms, picked by size by the engine. */
public final class BroadcastAlgorithms {
  private BroadcastAlgorithms() {}

  public static void direct(Links links, int root) {
    int n = links.size();
    int r = links.rank();
    int len = links.length();
    if (r == root) {
      for (int d = 1; d < n; d++) {
        links.send((root + d) % n, 0, 0, len);
      }
    } else {
      links.recvCopy(root, 0, 0, len);
    }
  }

  public static void chain(Links links, int root) {
    int n = links.size();
    int r = links.rank();
    int len = links.length();
    int pos = Partition.mod(r - root, n);
    int next = (r + 1) % n;
    int prev = Partition.mod(r - 1, n);
    if (pos == 0) {
      links.send(next, 0, 0, len);
      return;
    }
    links.expectCopy(prev, 0, 0, len);
    int seg = links.segmentElements();
    int segments = links.segmentsOf(len);
    for (int k = 0; k < segments; k++) {
      int off = k * seg;
      int cnt = Math.min(seg, len - off);
      if (pos < n - 1) {
        links.recvCopySend(prev, 0, off, cnt, next, 0);
      } else {
        links.recvCopy(prev, 0, off, cnt);
      }
    }
  }
}
