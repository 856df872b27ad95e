package io.sparkcollective.core.algorithm;

/*
 * Dissemination barrier: ceil(log2 N) rounds; in round k rank r signals r + 2^k and waits for r - 2^k.
 * After the last round every rank has heard, directly or through others, from every rank.
 */

/** Barrier in ceil(log2 N) message latencies with empty messages. */
public final class DisseminationBarrier {
  private DisseminationBarrier() {}

  public static void barrier(Links links) {
    int n = links.size();
    int r = links.rank();
    for (int d = 1, step = 0; d < n; d <<= 1, step++) {
      links.send((r + d) % n, step, 0, 0);
      links.recvCopy(Partition.mod(r - d, n), step, 0, 0);
    }
  }
}
