package io.sparkcollective.core.kernel;

import io.sparkcollective.core.api.ReduceOp;

/**
 * Element-wise reductions {@code dst[i] = op(dst[i], src[i])} over primitive arrays. The operator is
 * dispatched once per call, outside the loop, and each loop body is a single simple statement over two
 * arrays so that C2's superword pass turns it into SIMD code (checked by {@code KernelBenchmark} in the
 * benchmarks module against a plain {@code a[i] += b[i]} loop and a copy of the same bytes).
 *
 * <p>AVG reduces as SUM here; the division by the group size happens once at the end
 * ({@link #divide(float[], int, int, int)} and friends).
 */
public final class Kernels {
  private Kernels() {}

  public static void reduce(float[] dst, int dstOff, float[] src, int srcOff, int n, ReduceOp op) {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] += src[srcOff + i];
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] *= src[srcOff + i];
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] = Math.min(dst[dstOff + i], src[srcOff + i]);
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] = Math.max(dst[dstOff + i], src[srcOff + i]);
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  public static void reduce(double[] dst, int dstOff, double[] src, int srcOff, int n, ReduceOp op) {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] += src[srcOff + i];
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] *= src[srcOff + i];
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] = Math.min(dst[dstOff + i], src[srcOff + i]);
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] = Math.max(dst[dstOff + i], src[srcOff + i]);
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  public static void reduce(int[] dst, int dstOff, int[] src, int srcOff, int n, ReduceOp op) {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] += src[srcOff + i];
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] *= src[srcOff + i];
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] = Math.min(dst[dstOff + i], src[srcOff + i]);
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] = Math.max(dst[dstOff + i], src[srcOff + i]);
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  public static void reduce(long[] dst, int dstOff, long[] src, int srcOff, int n, ReduceOp op) {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] += src[srcOff + i];
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] *= src[srcOff + i];
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] = Math.min(dst[dstOff + i], src[srcOff + i]);
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          dst[dstOff + i] = Math.max(dst[dstOff + i], src[srcOff + i]);
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  /** {@code a[i] /= divisor}: the last step of AVG. Division, not multiplication by 1/n, so it is exact. */
  public static void divide(float[] a, int off, int n, int divisor) {
    float d = divisor;
    for (int i = 0; i < n; i++) {
      a[off + i] /= d;
    }
  }

  public static void divide(double[] a, int off, int n, int divisor) {
    double d = divisor;
    for (int i = 0; i < n; i++) {
      a[off + i] /= d;
    }
  }

  public static void divide(int[] a, int off, int n, int divisor) {
    for (int i = 0; i < n; i++) {
      a[off + i] /= divisor;
    }
  }

  public static void divide(long[] a, int off, int n, int divisor) {
    for (int i = 0; i < n; i++) {
      a[off + i] /= divisor;
    }
  }
}
