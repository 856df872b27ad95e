package io.sparkcollective.core.kernel;

import io.sparkcollective.core.api.ReduceOp;

/**
 * Element-wise reductions {@code dst[i] = op(dst[i], src[i])}, i in [from, from+n), over primitive arrays.
 * The operator is dispatched once per call, outside the loop, and each loop body is one simple statement
 * over two arrays indexed alike, so that C2's superword pass turns it into SIMD code (checked by
 * {@code KernelBenchmark} in the benchmarks module against a plain {@code a[i] += b[i]} loop and a copy of
 * the same bytes).
 *
 * <p>Both arrays are indexed by the same {@code i} on purpose: C2 (JDK 17) vectorises
 * {@code d[x + i] op= s[y + i]} only when x and y are the same invariant expression, since it must prove both
 * references equally aligned; with unrelated offsets the loop stays scalar and runs about 7x slower. So
 * received values are copied to the destination's own indices in a scratch array (or, for very long
 * vectors, both ranges are staged into 0-based scratch arrays), and two vectors laid out alike (ranks of one
 * process reading each other's memory) are reduced in place.
 *
 * <p>AVG reduces as SUM here; the division by the group size happens once at the end
 * ({@link #divide(float[], int, int, int)} and friends).
 */
public final class Kernels {
  private Kernels() {}

  public static void reduce(float[] dst, float[] src, int n, ReduceOp op) {
    reduce(dst, src, 0, n, op);
  }

  public static void reduce(float[] dst, float[] src, int from, int n, ReduceOp op) {
    int end = from + n;
    switch (op) {
      case SUM:
      case AVG:
        for (int i = from; i < end; i++) {
          dst[i] += src[i];
        }
        break;
      case PROD:
        for (int i = from; i < end; i++) {
          dst[i] *= src[i];
        }
        break;
      case MIN:
        for (int i = from; i < end; i++) {
          dst[i] = Math.min(dst[i], src[i]);
        }
        break;
      case MAX:
        for (int i = from; i < end; i++) {
          dst[i] = Math.max(dst[i], src[i]);
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  public static void reduce(double[] dst, double[] src, int n, ReduceOp op) {
    reduce(dst, src, 0, n, op);
  }

  public static void reduce(double[] dst, double[] src, int from, int n, ReduceOp op) {
    int end = from + n;
    switch (op) {
      case SUM:
      case AVG:
        for (int i = from; i < end; i++) {
          dst[i] += src[i];
        }
        break;
      case PROD:
        for (int i = from; i < end; i++) {
          dst[i] *= src[i];
        }
        break;
      case MIN:
        for (int i = from; i < end; i++) {
          dst[i] = Math.min(dst[i], src[i]);
        }
        break;
      case MAX:
        for (int i = from; i < end; i++) {
          dst[i] = Math.max(dst[i], src[i]);
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  public static void reduce(int[] dst, int[] src, int n, ReduceOp op) {
    reduce(dst, src, 0, n, op);
  }

  public static void reduce(int[] dst, int[] src, int from, int n, ReduceOp op) {
    int end = from + n;
    switch (op) {
      case SUM:
      case AVG:
        for (int i = from; i < end; i++) {
          dst[i] += src[i];
        }
        break;
      case PROD:
        for (int i = from; i < end; i++) {
          dst[i] *= src[i];
        }
        break;
      case MIN:
        for (int i = from; i < end; i++) {
          dst[i] = Math.min(dst[i], src[i]);
        }
        break;
      case MAX:
        for (int i = from; i < end; i++) {
          dst[i] = Math.max(dst[i], src[i]);
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  public static void reduce(long[] dst, long[] src, int n, ReduceOp op) {
    reduce(dst, src, 0, n, op);
  }

  public static void reduce(long[] dst, long[] src, int from, int n, ReduceOp op) {
    int end = from + n;
    switch (op) {
      case SUM:
      case AVG:
        for (int i = from; i < end; i++) {
          dst[i] += src[i];
        }
        break;
      case PROD:
        for (int i = from; i < end; i++) {
          dst[i] *= src[i];
        }
        break;
      case MIN:
        for (int i = from; i < end; i++) {
          dst[i] = Math.min(dst[i], src[i]);
        }
        break;
      case MAX:
        for (int i = from; i < end; i++) {
          dst[i] = Math.max(dst[i], src[i]);
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
