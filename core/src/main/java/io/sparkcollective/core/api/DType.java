package io.sparkcollective.core.api;

/**
 * Element types a {@link Communicator} reduces. The half-precision types are widened to F32 for the
 * whole reduction and rounded once (round to nearest, ties to even) when the result is written back, so
 * their sums carry F32 accuracy; the wire then carries F32 for them.
 */
public enum DType {
  /** IEEE 754 binary32. */
  F32(4, 1),
  /** IEEE 754 binary64. */
  F64(8, 2),
  /** IEEE 754 binary16, accumulated in F32. */
  F16(2, 3),
  /** bfloat16 (the upper half of a binary32), accumulated in F32. */
  BF16(2, 4),
  /** Two's complement 32-bit integer; SUM and PROD wrap on overflow like Java's {@code int}. */
  I32(4, 5),
  /** Two's complement 64-bit integer; SUM and PROD wrap on overflow like Java's {@code long}. */
  I64(8, 6);

  /** Wire code of raw bytes (object collectives); not a reducible type. */
  public static final int BYTES_WIRE_CODE = 0;

  /** Wire code of F32 data sent as bfloat16 (wire compression, see {@link CollectiveOptions#withWireType}). */
  public static final int F32_AS_BF16_WIRE_CODE = 7;

  private static final DType[] BY_CODE = new DType[7];

  static {
    for (DType t : values()) {
      BY_CODE[t.wireCode] = t;
    }
  }

  private final int byteSize;
  private final int wireCode;

  DType(int byteSize, int wireCode) {
    this.byteSize = byteSize;
    this.wireCode = wireCode;
  }

  /** Bytes per element in the user's buffer. */
  public int byteSize() {
    return byteSize;
  }

  /** Stable code used in frame headers. */
  public int wireCode() {
    return wireCode;
  }

  /** True for F16 and BF16, which are reduced in F32. */
  public boolean isHalf() {
    return this == F16 || this == BF16;
  }

  /** True for the floating-point types. */
  public boolean isFloating() {
    return this != I32 && this != I64;
  }

  /** The name of a wire code, for error messages. */
  public static String nameOfWireCode(int code) {
    if (code == BYTES_WIRE_CODE) {
      return "BYTES";
    }
    if (code == F32_AS_BF16_WIRE_CODE) {
      return "F32 with BF16 on the wire";
    }
    return code > 0 && code < BY_CODE.length ? BY_CODE[code].name() : "dtype#" + code;
  }
}
