package io.sparkcollective.core.testing;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.kernel.HalfFloats;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Test vectors of any {@link DType} in any of the memory forms a {@link DataBuffer} accepts, built from
 * and read back as {@code double} or {@code long} values, so one reference serves every type.
 */
public final class TypedData {
  /** Memory forms. */
  public enum Form {
    ARRAY,
    DIRECT_LITTLE_ENDIAN,
    HEAP_LITTLE_ENDIAN,
    HEAP_BIG_ENDIAN
  }

  private final DType dtype;
  private final Object array;
  private final ByteBuffer buffer;
  private final int length;

  private TypedData(DType dtype, Object array, ByteBuffer buffer, int length) {
    this.dtype = dtype;
    this.array = array;
    this.buffer = buffer;
    this.length = length;
  }

  /** Only ByteBuffer forms exist for the half types; ARRAY falls back to a direct buffer for them. */
  public static TypedData of(DType dtype, Form form, long[] integerValues, double[] floatValues) {
    int n = dtype.isFloating() ? floatValues.length : integerValues.length;
    if (form == Form.ARRAY && !dtype.isHalf()) {
      switch (dtype) {
        case F32: {
          float[] a = new float[n];
          for (int i = 0; i < n; i++) {
            a[i] = (float) floatValues[i];
          }
          return new TypedData(dtype, a, null, n);
        }
        case F64:
          return new TypedData(dtype, floatValues.clone(), null, n);
        case I32: {
          int[] a = new int[n];
          for (int i = 0; i < n; i++) {
            a[i] = (int) integerValues[i];
          }
          return new TypedData(dtype, a, null, n);
        }
        case I64:
          return new TypedData(dtype, integerValues.clone(), null, n);
        default:
          throw new IllegalStateException();
      }
    }
    ByteBuffer b = form == Form.HEAP_BIG_ENDIAN
        ? ByteBuffer.allocate(n * dtype.byteSize()).order(ByteOrder.BIG_ENDIAN)
        : form == Form.HEAP_LITTLE_ENDIAN ? ByteBuffer.allocate(n * dtype.byteSize()).order(ByteOrder.LITTLE_ENDIAN)
        : ByteBuffer.allocateDirect(n * dtype.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < n; i++) {
      int at = i * dtype.byteSize();
      switch (dtype) {
        case F32:
          b.putFloat(at, (float) floatValues[i]);
          break;
        case F64:
          b.putDouble(at, floatValues[i]);
          break;
        case I32:
          b.putInt(at, (int) integerValues[i]);
          break;
        case I64:
          b.putLong(at, integerValues[i]);
          break;
        case F16:
          b.putShort(at, HalfFloats.floatToF16((float) floatValues[i]));
          break;
        case BF16:
          b.putShort(at, HalfFloats.floatToBf16((float) floatValues[i]));
          break;
        default:
          throw new IllegalStateException();
      }
    }
    return new TypedData(dtype, null, b, n);
  }

  public DataBuffer buffer() {
    if (buffer != null) {
      return DataBuffer.of(buffer, dtype);
    }
    switch (dtype) {
      case F32:
        return DataBuffer.of((float[]) array);
      case F64:
        return DataBuffer.of((double[]) array);
      case I32:
        return DataBuffer.of((int[]) array);
      case I64:
        return DataBuffer.of((long[]) array);
      default:
        throw new IllegalStateException();
    }
  }

  public int length() {
    return length;
  }

  /** Element i as exact bits for comparison: the integer for integer types, double bits for floats. */
  public long bits(int i) {
    if (!dtype.isFloating()) {
      return integer(i);
    }
    double d = floating(i);
    return Double.doubleToLongBits(d);
  }

  public double floating(int i) {
    if (array != null) {
      return dtype == DType.F32 ? ((float[]) array)[i] : ((double[]) array)[i];
    }
    int at = i * dtype.byteSize();
    switch (dtype) {
      case F32:
        return buffer.getFloat(at);
      case F64:
        return buffer.getDouble(at);
      case F16:
        return HalfFloats.f16ToFloat(buffer.getShort(at));
      case BF16:
        return HalfFloats.bf16ToFloat(buffer.getShort(at));
      default:
        throw new IllegalStateException(dtype + " is not floating");
    }
  }

  public long integer(int i) {
    if (array != null) {
      return dtype == DType.I32 ? ((int[]) array)[i] : ((long[]) array)[i];
    }
    int at = i * dtype.byteSize();
    return dtype == DType.I32 ? buffer.getInt(at) : buffer.getLong(at);
  }
}
