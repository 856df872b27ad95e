package io.sparkcollective.core.algorithm;

/** Reduce-scatter and all-gather on their own, built from the two halves of {@link RingAllReduce}. */
public final class RingCollectives {
  private RingCollectives() {}

  /** Leaves block {@code rank} of {@code bounds} reduced on each rank. */
  public static void reduceScatter(Links links, int[] bounds) {
    if (links.size() > 1) {
      RingAllReduce.reduceScatter(links, bounds, false, true);
    }
  }

  /** Each rank's block {@code rank} of {@code bounds} must be in place; on return all blocks are. */
  public static void allGather(Links links, int[] bounds) {
    if (links.size() > 1) {
      RingAllReduce.expectGather(links, bounds);
      RingAllReduce.allGather(links, bounds, true);
    }
  }
}
