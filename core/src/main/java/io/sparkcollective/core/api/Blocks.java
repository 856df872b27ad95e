package io.sparkcollective.core.api;

/**
 * How a vector of {@code length} elements is cut into {@code size} contiguous blocks, one per rank: the
 * first {@code length % size} blocks hold one element more. {@link Communicator#reduceScatter} leaves
 * rank r's result in block r.
 */
public final class Blocks {
  private Blocks() {}

  /** First element of block {@code block}. */
  public static int offset(int length, int size, int block) {
    int base = length / size;
    int extra = length % size;
    return block * base + Math.min(block, extra);
  }

  /** Number of elements in block {@code block}. */
  public static int length(int length, int size, int block) {
    return length / size + (block < length % size ? 1 : 0);
  }
}
