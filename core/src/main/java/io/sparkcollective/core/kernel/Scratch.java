package io.sparkcollective.core.kernel;

/**
 * Reusable arrays for one operation at a time: segment-sized staging for reductions and, for ByteBuffer
 * and half-precision inputs, a working copy of the whole vector. Arrays grow to the largest request and
 * are then kept, so steady-state operations allocate nothing. Not thread-safe: one owner at a time.
 */
public final class Scratch {
  private short[] segShorts = new short[0];
  private final float[][] segF32 = {new float[0], new float[0]};
  private final double[][] segF64 = {new double[0], new double[0]};
  private final int[][] segI32 = {new int[0], new int[0]};
  private final long[][] segI64 = {new long[0], new long[0]};
  private final float[][] workF32 = {new float[0], new float[0]};
  private final double[][] workF64 = {new double[0], new double[0]};
  private final int[][] workI32 = {new int[0], new int[0]};
  private final long[][] workI64 = {new long[0], new long[0]};

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

  /** Drops the working copies (after an unusually large operation, or on close). */
  public void trim() {
    for (int slot = 0; slot < 2; slot++) {
      workF32[slot] = new float[0];
      workF64[slot] = new double[0];
      workI32[slot] = new int[0];
      workI64[slot] = new long[0];
    }
  }
}
