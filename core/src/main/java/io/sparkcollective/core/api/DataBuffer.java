package io.sparkcollective.core.api;

import java.nio.ByteBuffer;

/**
 * A typed window on the caller's memory that a collective reads and writes in place: a range of a
 * primitive array, or the bytes between a {@link ByteBuffer}'s position and limit read in that buffer's
 * byte order. It holds no copy; the caller must not touch the memory while an operation on it runs.
 *
 * <p>{@link Communicator}'s array overloads build one of these; use it directly for {@code ByteBuffer}s
 * and for the half-precision types.
 */
public final class DataBuffer {
  private final Object array;
  private final ByteBuffer buffer;
  private final DType dtype;
  private final int offset;
  private final int length;

  private DataBuffer(Object array, ByteBuffer buffer, DType dtype, int offset, int length) {
    this.array = array;
    this.buffer = buffer;
    this.dtype = dtype;
    this.offset = offset;
    this.length = length;
  }

  public static DataBuffer of(float[] data) {
    return of(data, 0, requireArray(data, "float[]").length);
  }

  public static DataBuffer of(float[] data, int offset, int length) {
    checkRange(requireArray(data, "float[]").length, offset, length, "float[]");
    return new DataBuffer(data, null, DType.F32, offset, length);
  }

  public static DataBuffer of(double[] data) {
    return of(data, 0, requireArray(data, "double[]").length);
  }

  public static DataBuffer of(double[] data, int offset, int length) {
    checkRange(requireArray(data, "double[]").length, offset, length, "double[]");
    return new DataBuffer(data, null, DType.F64, offset, length);
  }

  public static DataBuffer of(int[] data) {
    return of(data, 0, requireArray(data, "int[]").length);
  }

  public static DataBuffer of(int[] data, int offset, int length) {
    checkRange(requireArray(data, "int[]").length, offset, length, "int[]");
    return new DataBuffer(data, null, DType.I32, offset, length);
  }

  public static DataBuffer of(long[] data) {
    return of(data, 0, requireArray(data, "long[]").length);
  }

  public static DataBuffer of(long[] data, int offset, int length) {
    checkRange(requireArray(data, "long[]").length, offset, length, "long[]");
    return new DataBuffer(data, null, DType.I64, offset, length);
  }

  /**
   * The elements between {@code buffer.position()} and {@code buffer.limit()}, in {@code buffer.order()}.
   * The buffer's position and limit are not changed by any operation.
   */
  public static DataBuffer of(ByteBuffer buffer, DType dtype) {
    if (buffer == null) {
      throw new CollectiveUsageException("ByteBuffer is null");
    }
    if (dtype == null) {
      throw new CollectiveUsageException("DType is null for a ByteBuffer of " + buffer.remaining() + " bytes");
    }
    if (buffer.isReadOnly()) {
      throw new CollectiveUsageException("ByteBuffer is read-only; collectives write their result in place");
    }
    int bytes = buffer.remaining();
    if (bytes % dtype.byteSize() != 0) {
      throw new CollectiveUsageException(
          "ByteBuffer has " + bytes + " bytes remaining, not a multiple of " + dtype + "'s " + dtype.byteSize());
    }
    return new DataBuffer(null, buffer, dtype, buffer.position(), bytes / dtype.byteSize());
  }

  /** The element type. */
  public DType dtype() {
    return dtype;
  }

  /** Number of elements. */
  public int length() {
    return length;
  }

  /** Bytes of user data covered. */
  public long byteLength() {
    return (long) length * dtype.byteSize();
  }

  /** Element offset into the array, or byte position in the ByteBuffer. */
  public int offset() {
    return offset;
  }

  /** The backing primitive array, or null for a ByteBuffer. */
  public Object array() {
    return array;
  }

  /** The backing ByteBuffer, or null for an array. */
  public ByteBuffer byteBuffer() {
    return buffer;
  }

  /** The same memory seen as {@code count} elements from element {@code from} of this window. */
  public DataBuffer slice(int from, int count) {
    checkRange(length, from, count, "DataBuffer of " + length + " " + dtype);
    int start = buffer == null ? offset + from : offset + from * dtype.byteSize();
    return new DataBuffer(array, buffer, dtype, start, count);
  }

  @Override
  public String toString() {
    String where = buffer != null ? (buffer.isDirect() ? "direct ByteBuffer" : "heap ByteBuffer") : "array";
    return dtype + "[" + length + "] (" + where + ")";
  }

  private static <T> T requireArray(T data, String what) {
    if (data == null) {
      throw new CollectiveUsageException(what + " is null");
    }
    return data;
  }

  private static void checkRange(int capacity, int offset, int length, String what) {
    if (offset < 0 || length < 0 || offset > capacity - length) {
      throw new CollectiveUsageException(
          "offset " + offset + " and length " + length + " do not fit in " + what + " of length " + capacity);
    }
  }
}
