package io.sparkcollective.core.api;

/**
 * Element-wise reduction operators.
 *
 * <p>AVG is SUM followed by a division by the group size, done once on the final sum: for floating types
 * that is the correctly rounded quotient of the (order-fixed) sum; for integer types it is the wrapped
 * two's complement sum divided with Java's truncating division. MIN and MAX follow {@link Math#min} and
 * {@link Math#max}: a NaN in any rank's input gives NaN.
 */
public enum ReduceOp {
  SUM(1),
  AVG(2),
  MIN(3),
  MAX(4),
  PROD(5);

  /** Wire code of "no reduction" (gather, broadcast, barrier, point-to-point). */
  public static final int NONE_WIRE_CODE = 0;

  private final int wireCode;

  ReduceOp(int wireCode) {
    this.wireCode = wireCode;
  }

  /** Stable code used in frame headers. */
  public int wireCode() {
    return wireCode;
  }

  /** The name of a wire code, for error messages. */
  public static String nameOfWireCode(int code) {
    for (ReduceOp op : values()) {
      if (op.wireCode == code) {
        return op.name();
      }
    }
    return code == NONE_WIRE_CODE ? "-" : "op#" + code;
  }
}
