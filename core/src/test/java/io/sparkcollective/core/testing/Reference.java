package io.sparkcollective.core.testing;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.kernel.HalfFloats;

/**
 * Sequential reductions to compare collectives with: a plain fold over the ranks' inputs, element by
 * element, in the arithmetic the type defines (double for exact float inputs, wrapping int/long for
 * integers), rounded to the element type once at the end.
 */
public final class Reference {
  private Reference() {}

  /** Reduction of integer inputs {@code inputs[rank][i]} as the type's wrapping arithmetic defines it. */
  public static long[] reduceIntegers(DType dtype, ReduceOp op, long[][] inputs) {
    int n = inputs[0].length;
    int ranks = inputs.length;
    long[] out = new long[n];
    for (int i = 0; i < n; i++) {
      long acc = inputs[0][i];
      for (int r = 1; r < ranks; r++) {
        long x = inputs[r][i];
        switch (op) {
          case SUM:
          case AVG:
            acc = acc + x;
            break;
          case PROD:
            acc = acc * x;
            break;
          case MIN:
            acc = Math.min(acc, x);
            break;
          case MAX:
            acc = Math.max(acc, x);
            break;
          default:
            throw new IllegalStateException();
        }
        if (dtype == DType.I32) {
          acc = (int) acc;
        }
      }
      if (op == ReduceOp.AVG) {
        acc = dtype == DType.I32 ? (int) acc / ranks : acc / ranks;
      }
      out[i] = acc;
    }
    return out;
  }

  /**
   * Reduction of float inputs whose partial results are exact in double (small integers), so the order of
   * the fold does not matter; AVG divides in the element's (widened) type; the result is rounded to the
   * element type. Returned as double bits.
   */
  public static long[] reduceExactFloats(DType dtype, ReduceOp op, double[][] inputs) {
    int n = inputs[0].length;
    int ranks = inputs.length;
    long[] out = new long[n];
    for (int i = 0; i < n; i++) {
      double acc = inputs[0][i];
      for (int r = 1; r < ranks; r++) {
        double x = inputs[r][i];
        switch (op) {
          case SUM:
          case AVG:
            acc += x;
            break;
          case PROD:
            acc *= x;
            break;
          case MIN:
            acc = Math.min(acc, x);
            break;
          case MAX:
            acc = Math.max(acc, x);
            break;
          default:
            throw new IllegalStateException();
        }
      }
      double result;
      if (dtype == DType.F64) {
        result = op == ReduceOp.AVG ? acc / ranks : acc;
      } else {
        float f = (float) acc;
        if (op == ReduceOp.AVG) {
          f = f / ranks;
        }
        if (dtype == DType.F16) {
          f = HalfFloats.f16ToFloat(HalfFloats.floatToF16(f));
        } else if (dtype == DType.BF16) {
          f = HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(f));
        }
        result = f;
      }
      out[i] = Double.doubleToLongBits(result);
    }
    return out;
  }
}
