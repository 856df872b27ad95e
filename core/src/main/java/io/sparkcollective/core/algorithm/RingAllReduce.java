package io.sparkcollective.core.algorithm;

import static io.sparkcollective.core.algorithm.Partition.mod;

import io.sparkcollective.core.config.Tuning;

/*
 * Ring all-reduce = ring reduce-scatter, then ring all-gather, pipelined by segment.
 *
 *   vector: | chunk 0 | chunk 1 | ... | chunk N-1 |      chunk c ends up reduced on rank c
 *             seg seg   seg seg         seg seg        each chunk cut into segments of segmentElements
 *
 *   reduce-scatter, step s = 0..N-2:  rank r sends chunk (r-s-1), receives chunk (r-s-2) from r-1 and
 *                                     reduces it; that chunk is what it sends at step s+1
 *   all-gather, step N-1+g, g = 0..N-2: rank r sends chunk (r-g), receives chunk (r-g-1) and copies it
 *
 * Pipelining: as soon as segment k of a chunk has been combined it is forwarded to the right neighbour,
 * so the next rank works on segment k while this one receives segment k+1. The final value of every
 * element is computed on exactly one rank and then copied, so all ranks end bitwise identical.
 */

/**
 * Bandwidth-optimal ring: 2(N-1) steps, each rank sends and receives 2(N-1)/N of the vector (in passes over
 * pieces of the vector when it is long, see {@link #CHUNK_SEGMENTS}).
 */
public final class RingAllReduce implements AllReduceAlgorithm {
  public static final RingAllReduce INSTANCE = new RingAllReduce();

  /** Most segments of one rank's chunk in one pass (see {@link Tuning#RING_CHUNK_SEGMENTS}). */
  static final int CHUNK_SEGMENTS = Tuning.RING_CHUNK_SEGMENTS;

  /** Longest vector one pass covers: {@code ranks} chunks of {@link #CHUNK_SEGMENTS} segments. */
  @Override
  public long passElements(int ranks, int segmentElements) {
    return (long) CHUNK_SEGMENTS * segmentElements * ranks;
  }

  /** One pass uses steps 0 .. 2(n-1)-1; pass p of a longer vector starts at step 2np. */
  @Override
  public long steps(int ranks, long length, int segmentElements) {
    if (ranks < 2) {
      return 0;
    }
    long pass = passElements(ranks, segmentElements);
    long passes = Math.max(1, (length + pass - 1) / pass);
    return (passes - 1) * 2L * ranks + 2L * (ranks - 1);
  }

  @Override
  public void allReduce(Links links) {
    int n = links.size();
    int len = links.length();
    long piece = passElements(n, links.segmentElements());
    if (len <= piece) {
      onePass(links);
      return;
    }
    int[] everyone = new int[n];
    for (int i = 0; i < n; i++) {
      everyone[i] = i;
    }
    // A pass uses steps 0 .. 2(n-1)-1; each piece gets its own range, so a frame cannot pass for another's.
    SubgroupLinks pass = new SubgroupLinks(links, everyone, 0, 0, 0);
    int p = 0;
    for (long off = 0; off < len; off += piece, p++) {
      onePass(pass.window(p * 2 * n, (int) off, (int) Math.min(piece, len - off)));
    }
  }

  private static void onePass(Links links) {
    int n = links.size();
    int[] bounds = Partition.even(links.length(), n);
    expectGather(links, bounds);
    reduceScatter(links, bounds, true, true);
    allGather(links, bounds, false);
  }

  /**
   * Leaves chunk {@code rank} of {@code bounds} fully reduced. With {@code forwardResult} each finished
   * segment is also sent on as step N-1 (the first all-gather step), so the all-gather can follow without
   * a bubble. With {@code finalSums} (nothing more is combined into the chunk in this operation) its last sums
   * are {@link Links#recvReduceFinal}.
   */
  static void reduceScatter(Links links, int[] bounds, boolean forwardResult, boolean finalSums) {
    int n = links.size();
    int r = links.rank();
    int right = mod(r + 1, n);
    int left = mod(r - 1, n);
    sendChunk(links, right, 0, bounds, mod(r - 1, n));
    int seg = links.segmentElements();
    for (int s = 0; s < n - 1; s++) {
      int c = mod(r - s - 2, n);
      int off = bounds[c];
      int len = bounds[c + 1] - off;
      int segments = links.segmentsOf(len);
      boolean forward = s < n - 2 || forwardResult;
      for (int k = 0; k < segments; k++) {
        int so = off + k * seg;
        int sn = Math.min(seg, len - k * seg);
        if (finalSums && s == n - 2) {
          links.recvReduceFinal(left, s, so, sn);
        } else {
          links.recvReduce(left, s, so, sn);
        }
        if (forward) {
          links.send(right, s + 1, so, sn);
        }
      }
    }
  }

  /**
   * Spreads every rank's chunk to all. With {@code sendOwnFirst} this rank's own chunk is sent here;
   * otherwise {@link #reduceScatter} already sent it.
   */
  static void allGather(Links links, int[] bounds, boolean sendOwnFirst) {
    int n = links.size();
    int r = links.rank();
    int right = mod(r + 1, n);
    int left = mod(r - 1, n);
    int first = n - 1;
    if (sendOwnFirst) {
      sendChunk(links, right, first, bounds, r);
    }
    int seg = links.segmentElements();
    for (int g = 0; g < n - 1; g++) {
      int c = mod(r - g - 1, n);
      int off = bounds[c];
      int len = bounds[c + 1] - off;
      int segments = links.segmentsOf(len);
      for (int k = 0; k < segments; k++) {
        int so = off + k * seg;
        int sn = Math.min(seg, len - k * seg);
        if (g < n - 2) {
          links.recvCopySend(left, first + g, so, sn, right, first + g + 1);
        } else {
          links.recvCopy(left, first + g, so, sn);
        }
      }
    }
  }

  /**
   * Announces the all-gather's copies ({@link Links#expectCopy}): they arrive while the reduce-scatter still runs,
   * as the left neighbour forwards each chunk's segments as soon as they are final.
   */
  static void expectGather(Links links, int[] bounds) {
    int n = links.size();
    int r = links.rank();
    int left = mod(r - 1, n);
    for (int g = 0; g < n - 1; g++) {
      int c = mod(r - g - 1, n);
      links.expectCopy(left, n - 1 + g, bounds[c], bounds[c + 1] - bounds[c]);
    }
  }

  private static void sendChunk(Links links, int peer, int step, int[] bounds, int chunk) {
    links.send(peer, step, bounds[chunk], bounds[chunk + 1] - bounds[chunk]);
  }
}
