package io.sparkcollective.core.kernel;

import io.sparkcollective.core.config.Tuning;

/**
 * Reusable arrays for one operation at a time: an array indexed like the vector for received values (up to
 * {@link #ALIGNED_MAX_ELEMENTS}), segment-sized staging for longer vectors and, for ByteBuffer and
 * half-precision inputs, a working copy of the whole vector. Arrays grow to the largest request and
 * are then kept, so steady-state operations allocate nothing. Not thread-safe: one owner at a time.
 */
public final class Scratch {
  private short[] segShorts = new short[0];
  private short[] halfChunk = new short[0];
  private long[] marks = new long[0];
  private final float[][] segF32 = {new float[0], new float[0]};
  private final double[][] segF64 = {new double[0], new double[0]};
  private final int[][] segI32 = {new int[0], new int[0]};
  private final long[][] segI64 = {new long[0], new long[0]};
  private final float[][] workF32 = {new float[0], new float[0]};
  private final double[][] workF64 = {new double[0], new double[0]};
  private final int[][] workI32 = {new int[0], new int[0]};
  private final long[][] workI64 = {new long[0], new long[0]};
  private final byte[][] workBytes = {new byte[0], new byte[0]};
  private float[] alignedF32 = new float[0];
  private double[] alignedF64 = new double[0];
  private int[] alignedI32 = new int[0];
  private long[] alignedI64 = new long[0];

  /**
   * Longest vector (in elements) for which a reduction gets an array indexed like the vector itself
   * ({@code alignedFloats} and friends), so that it reduces in place without staging; longer vectors stage
   * segment by segment instead of holding another copy of their size.
   */
  public static final int ALIGNED_MAX_ELEMENTS = Tuning.ALIGNED_MAX_ELEMENTS;
  private int alignedMax = ALIGNED_MAX_ELEMENTS;

  int alignedMax() {
    return alignedMax;
  }

  /** Lowers the limit above (tests of the staging path). */
  void alignedMax(int max) {
    this.alignedMax = max;
  }

  /** {@code words} longs, all zero (tile marks of one operation). */
  long[] clearedWords(int words) {
    if (marks.length < words) {
      marks = new long[Math.max(words, 2 * marks.length)];
    } else {
      java.util.Arrays.fill(marks, 0, words, 0L);
    }
    return marks;
  }

  /** {@code n} shorts through which half-precision vectors are widened and narrowed, chunk by chunk. */
  short[] halfChunk(int n) {
    if (halfChunk.length < n) {
      halfChunk = new short[n];
    }
    return halfChunk;
  }

  /** Segment-sized staging for 16-bit wire values (bulk transfers out of a wire buffer). */
  short[] segmentShorts(int n) {
    if (segShorts.length < n) {
      segShorts = new short[n];
    }
    return segShorts;
  }

  /** Segment-sized array number {@code slot} (0 or 1: a reduction stages both operands). */
  float[] segmentFloats(int slot, int n) {
    if (segF32[slot].length < n) {
      segF32[slot] = new float[n];
    }
    return segF32[slot];
  }

  /** Segment-sized array number {@code slot} (0 or 1: a reduction stages both operands). */
  double[] segmentDoubles(int slot, int n) {
    if (segF64[slot].length < n) {
      segF64[slot] = new double[n];
    }
    return segF64[slot];
  }

  /** Segment-sized array number {@code slot} (0 or 1: a reduction stages both operands). */
  int[] segmentInts(int slot, int n) {
    if (segI32[slot].length < n) {
      segI32[slot] = new int[n];
    }
    return segI32[slot];
  }

  /** Segment-sized array number {@code slot} (0 or 1: a reduction stages both operands). */
  long[] segmentLongs(int slot, int n) {
    if (segI64[slot].length < n) {
      segI64[slot] = new long[n];
    }
    return segI64[slot];
  }

  /** Working copy number {@code slot} (0 or 1: an operation may stage two buffers at once). */
  float[] workFloats(int slot, int n) {
    if (workF32[slot].length < n) {
      workF32[slot] = new float[n];
    }
    return workF32[slot];
  }

  double[] workDoubles(int slot, int n) {
    if (workF64[slot].length < n) {
      workF64[slot] = new double[n];
    }
    return workF64[slot];
  }

  int[] workInts(int slot, int n) {
    if (workI32[slot].length < n) {
      workI32[slot] = new int[n];
    }
    return workI32[slot];
  }

  long[] workLongs(int slot, int n) {
    if (workI64[slot].length < n) {
      workI64[slot] = new long[n];
    }
    return workI64[slot];
  }

  /** Working bytes number {@code slot} (0 or 1), at least {@code n} long, as a buffer of exactly {@code n}. */
  java.nio.ByteBuffer workBytes(int slot, int n) {
    if (workBytes[slot].length < n) {
      workBytes[slot] = new byte[n];
    }
    return java.nio.ByteBuffer.wrap(workBytes[slot], 0, n).slice();
  }

  /** Length of working copy 0 for {@code dtype} (F32, F64, I32, I64): what staging a vector has cost so far. */
  int workLength(io.sparkcollective.core.api.DType dtype) {
    switch (dtype) {
      case F32:
        return workF32[0].length;
      case F64:
        return workF64[0].length;
      case I32:
        return workI32[0].length;
      default:
        return workI64[0].length;
    }
  }

  /** An array of at least {@code n} elements for received values placed at their own vector indices. */
  float[] alignedFloats(int n) {
    if (alignedF32.length < n) {
      alignedF32 = new float[n];
    }
    return alignedF32;
  }

  /** An array of at least {@code n} elements for received values placed at their own vector indices. */
  double[] alignedDoubles(int n) {
    if (alignedF64.length < n) {
      alignedF64 = new double[n];
    }
    return alignedF64;
  }

  /** An array of at least {@code n} elements for received values placed at their own vector indices. */
  int[] alignedInts(int n) {
    if (alignedI32.length < n) {
      alignedI32 = new int[n];
    }
    return alignedI32;
  }

  /** An array of at least {@code n} elements for received values placed at their own vector indices. */
  long[] alignedLongs(int n) {
    if (alignedI64.length < n) {
      alignedI64 = new long[n];
    }
    return alignedI64;
  }

  /** Drops the working copies (after an unusually large operation, or on close). */
  public void trim() {
    for (int slot = 0; slot < 2; slot++) {
      workF32[slot] = new float[0];
      workF64[slot] = new double[0];
      workI32[slot] = new int[0];
      workI64[slot] = new long[0];
      workBytes[slot] = new byte[0];
    }
    alignedF32 = new float[0];
    alignedF64 = new double[0];
    alignedI32 = new int[0];
    alignedI64 = new long[0];
  }
}
