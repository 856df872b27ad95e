package io.sparkcollective.core.api;

/**
 * Element types a {@link Communicator} reduces. The half-precision types are summed in F32. By default they
 * travel in their own 16 bits, so each partial sum is rounded to the type (round to nearest, ties to even)
 * where it is sent on: half the bytes, an error of at most about {@code (N-1) u sum|x|} over the exact sum's
 * {@code u |sum x|} for N ranks and the type's unit roundoff u (2^-11 for F16, 2^-8 for BF16). The exact
 * mode ({@link CollectiveOptions#withWireType} F32) sends F32 and rounds once, at the end.
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

  /** Wire code of F16 data summed on a 16-bit wire (the default for F16 reductions). */
  public static final int F16_ON_16_BIT_WIRE_CODE = 8;

  /** Wire code of BF16 data summed on a 16-bit wire (the default for BF16 reductions). */
  public static final int BF16_ON_16_BIT_WIRE_CODE = 9;

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

  /** The wire code of this half-precision type's reductions in its own 16 bits. */
  public int sixteenBitWireCode() {
    if (!isHalf()) {
      throw new IllegalStateException(this + " is not a half-precision type");
    }
    return this == F16 ? F16_ON_16_BIT_WIRE_CODE : BF16_ON_16_BIT_WIRE_CODE;
  }

  /** True for the floating-point types. */
  public boolean isFloating() {
    return this != I32 && this != I64;
  }

  /** Bytes per element of the sender's buffer for wire code {@code code} (1 for BYTES and unknown codes). */
  public static int byteSizeOfWireCode(int code) {
    if (code == F32_AS_BF16_WIRE_CODE) {
      return F32.byteSize;
    }
    if (code == F16_ON_16_BIT_WIRE_CODE || code == BF16_ON_16_BIT_WIRE_CODE) {
      return F16.byteSize;
    }
    return code > 0 && code < BY_CODE.length ? BY_CODE[code].byteSize : 1;
  }

  /** The name of a wire code, for error messages. */
  public static String nameOfWireCode(int code) {
    if (code == BYTES_WIRE_CODE) {
      return "BYTES";
    }
    if (code == F32_AS_BF16_WIRE_CODE) {
      return "F32 with BF16 on the wire";
    }
    if (code == F16_ON_16_BIT_WIRE_CODE || code == BF16_ON_16_BIT_WIRE_CODE) {
      return (code == F16_ON_16_BIT_WIRE_CODE ? "F16" : "BF16") + " in 16 bits on the wire";
    }
    return code > 0 && code < BY_CODE.length ? BY_CODE[code].name() : "dtype#" + code;
  }
}
