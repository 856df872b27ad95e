package io.sparkcollective.core.algorithm;

import io.sparkcollective.core.api.Blocks;

/** Where each rank's block starts in a vector cut into {@code size} blocks: {@code bounds[c]..bounds[c+1]}. */
public final class Partition {
  private Partition() {}

  /** Even blocks as {@link Blocks} defines them. */
  public static int[] even(int length, int size) {
    int[] bounds = new int[size + 1];
    for (int c = 0; c <= size; c++) {
      bounds[c] = c == size ? length : Blocks.offset(length, size, c);
    }
    return bounds;
  }

  /** Blocks of the given lengths, one after another. */
  public static int[] ofLengths(int[] lengths) {
    int[] bounds = new int[lengths.length + 1];
    for (int c = 0; c < lengths.length; c++) {
      bounds[c + 1] = Math.addExact(bounds[c], lengths[c]);
    }
    return bounds;
  }

  static int mod(int a, int n) {
    int m = a % n;
    return m < 0 ? m + n : m;
  }
}
