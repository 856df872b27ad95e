package io.sparkcollective.core.kernel;

import io.sparkcollective.core.api.ReduceOp;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Kernels}' reductions on little-endian memory outside the heap (direct and mapped buffers: a Python task's
 * array, a Java task's direct {@code ByteBuffer}, a frame or a shared-memory ring), read and written where it
 * lies through {@code sun.misc.Unsafe}, as Spark's and Netty's own off-heap code does.
 *
 * <p>C2 on JDK 17 does not vectorise a loop over off-heap memory, but the scalar loop still beats the
 * alternative, copying both operands into scratch arrays, summing those with SIMD code and copying the sum
 * back: those three copies cost more than the vector loop saves ({@code KernelBenchmark}'s
 * {@code foldInPlaceF32Direct} on one machine, in place against staged: 64 Ki floats in the caches 15.8 against
 * 23.2 us, 1 Mi floats 318 against 497 us; {@code segmentReduceF32Direct} 15.5 against 21.4 and 283 against 440
 * us; at 16 Mi floats, bound by memory, the two within their error).
 *
 * <p>Each loop computes exactly what the array kernel of the same type and operator computes (the same Java
 * operation on the same two operands in the same order), so ranks whose vectors live in arrays and ranks whose
 * vectors live in buffers end with the same bits.
 *
 * <p>Used only where the JVM offers it without warnings: from JDK 23 on the memory methods of
 * {@code sun.misc.Unsafe} are deprecated for removal (and warn from JDK 24), so there, and where the system
 * property {@value #DISABLE_PROPERTY} is {@code true}, {@link #AVAILABLE} is false and callers stage through
 * arrays as before. Callers check bounds and keep the buffers reachable: an address past a buffer's end is
 * memory of someone else's.
 */
final class OffHeapKernels {
  private static final Logger LOG = LoggerFactory.getLogger(OffHeapKernels.class);
  /** Set to {@code true} to stage every combine of off-heap memory through arrays (for comparisons). */
  static final String DISABLE_PROPERTY = "io.sparkcollective.kernels.staged";
  /** The last JDK whose {@code sun.misc.Unsafe} memory methods are neither deprecated for removal nor warn. */
  private static final int LAST_JDK = 22;

  /** Offset of {@code java.nio.Buffer.address} in a buffer object. */
  private static final long ADDRESS;
  /** {@code sun.misc.Unsafe}'s accessors, bound to its instance: C2 inlines a constant method handle. */
  private static final MethodHandle GET_BUFFER_LONG;
  private static final MethodHandle GET_INT;
  private static final MethodHandle PUT_INT;
  private static final MethodHandle GET_LONG;
  private static final MethodHandle PUT_LONG;
  private static final MethodHandle GET_FLOAT;
  private static final MethodHandle PUT_FLOAT;
  private static final MethodHandle GET_DOUBLE;
  private static final MethodHandle PUT_DOUBLE;
  /** True if off-heap reductions run in place here; false: callers stage through arrays. */
  static final boolean AVAILABLE;
  /** The {@code sun.misc.Unsafe} instance where {@link #AVAILABLE} (for other kernels of this package), else null. */
  static final Object UNSAFE;

  static {
    MethodHandle[] h = new MethodHandle[9];
    long address = -1;
    Object instance = null;
    String why = null;
    if (Boolean.getBoolean(DISABLE_PROPERTY)) {
      why = DISABLE_PROPERTY + " is set";
    } else if (Runtime.version().feature() > LAST_JDK) {
      why = "JDK " + Runtime.version().feature() + " deprecates sun.misc.Unsafe's memory access";
    } else if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
      why = "this machine is big-endian";
    } else {
      try {
        Class<?> type = Class.forName("sun.misc.Unsafe");
        Field f = type.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        Object unsafe = f.get(null);
        instance = unsafe;
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        address = (long) lookup.findVirtual(type, "objectFieldOffset", MethodType.methodType(long.class, Field.class))
            .invoke(unsafe, Buffer.class.getDeclaredField("address"));
        h[0] = lookup.findVirtual(type, "getLong", MethodType.methodType(long.class, Object.class, long.class))
            .bindTo(unsafe);
        Class<?>[] types = {int.class, long.class, float.class, double.class};
        for (int i = 0; i < types.length; i++) {
          String name = Character.toUpperCase(types[i].getName().charAt(0)) + types[i].getName().substring(1);
          h[1 + 2 * i] = lookup.findVirtual(type, "get" + name, MethodType.methodType(types[i], long.class))
              .bindTo(unsafe);
          h[2 + 2 * i] = lookup.findVirtual(type, "put" + name, MethodType.methodType(void.class, long.class,
              types[i])).bindTo(unsafe);
        }
        // Check the offset on buffers whose addresses the JDK states another way: a slice starts that far in.
        ByteBuffer probe = ByteBuffer.allocateDirect(16);
        if ((long) h[0].invoke(probe.duplicate().position(8).slice(), address)
            - (long) h[0].invoke(probe, address) != 8) {
          why = "java.nio.Buffer.address is not where it was looked for";
        }
      } catch (Throwable e) {
        why = e.toString();
      }
    }
    AVAILABLE = why == null;
    UNSAFE = AVAILABLE ? instance : null;
    ADDRESS = address;
    GET_BUFFER_LONG = h[0];
    GET_INT = h[1];
    PUT_INT = h[2];
    GET_LONG = h[3];
    PUT_LONG = h[4];
    GET_FLOAT = h[5];
    PUT_FLOAT = h[6];
    GET_DOUBLE = h[7];
    PUT_DOUBLE = h[8];
    if (!AVAILABLE) {
      LOG.debug("vectors outside the heap are combined through scratch arrays: {}", why);
    }
  }

  private OffHeapKernels() {}

  /** The address of element 0 of {@code b}, a direct buffer, or 0 if off-heap kernels are not available. */
  static long address(ByteBuffer b) {
    if (!AVAILABLE || !b.isDirect()) {
      return 0;
    }
    try {
      return (long) GET_BUFFER_LONG.invokeExact((Object) b, ADDRESS);
    } catch (Throwable e) {
      throw new IllegalStateException("cannot read a direct buffer's address", e);
    }
  }

  /**
   * {@code dst[i] = op(dst[i], src[i])} for i in [0, n), elements of {@code type} ({@code float.class},
   * {@code double.class}, {@code int.class} or {@code long.class}) at byte addresses {@code dst} and {@code src};
   * AVG combines as SUM. The caller guarantees that both ranges lie inside live buffers.
   */
  static void reduce(Class<?> type, long dst, long src, int n, ReduceOp op) {
    try {
      if (type == float.class) {
        reduceF32(dst, src, n, op);
      } else if (type == double.class) {
        reduceF64(dst, src, n, op);
      } else if (type == int.class) {
        reduceI32(dst, src, n, op);
      } else if (type == long.class) {
        reduceI64(dst, src, n, op);
      } else {
        throw new IllegalArgumentException("no off-heap kernel for " + type);
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code a[i] /= divisor} for i in [0, n), elements of {@code type} at byte address {@code a}: the last step of
   * AVG, as {@link Kernels#divide(float[], int, int, int)} and friends compute it.
   */
  static void divide(Class<?> type, long a, int n, int divisor) {
    try {
      if (type == float.class) {
        float d = divisor;
        for (int i = 0; i < n; i++) {
          PUT_FLOAT.invokeExact(a + 4L * i, (float) GET_FLOAT.invokeExact(a + 4L * i) / d);
        }
      } else if (type == double.class) {
        double d = divisor;
        for (int i = 0; i < n; i++) {
          PUT_DOUBLE.invokeExact(a + 8L * i, (double) GET_DOUBLE.invokeExact(a + 8L * i) / d);
        }
      } else if (type == int.class) {
        for (int i = 0; i < n; i++) {
          PUT_INT.invokeExact(a + 4L * i, (int) GET_INT.invokeExact(a + 4L * i) / divisor);
        }
      } else if (type == long.class) {
        for (int i = 0; i < n; i++) {
          PUT_LONG.invokeExact(a + 8L * i, (long) GET_LONG.invokeExact(a + 8L * i) / divisor);
        }
      } else {
        throw new IllegalArgumentException("no off-heap kernel for " + type);
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code d[from+i] = op(d[from+i], src[i])} for i in [0, n): a {@code float[]} or {@code double[]} folded with
   * little-endian elements of its type at byte address {@code src} (a received segment where it lies), as
   * {@link Kernels}' array loops compute it (the same operation on the same two operands in the same order).
   * Returns false, having done nothing, for other arrays. The caller guarantees that the source range lies inside
   * a live buffer.
   */
  static boolean reduceIntoArray(Object d, int from, long src, int n, ReduceOp op) {
    try {
      if (d instanceof float[]) {
        reduceIntoF32((float[]) d, from, src, n, op);
        return true;
      }
      if (d instanceof double[]) {
        reduceIntoF64((double[]) d, from, src, n, op);
        return true;
      }
      return false;
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  private static void reduceIntoF32(float[] a, int from, long s, int n, ReduceOp op) throws Throwable {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          a[from + i] += (float) GET_FLOAT.invokeExact(s + 4L * i);
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          a[from + i] *= (float) GET_FLOAT.invokeExact(s + 4L * i);
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          a[from + i] = Math.min(a[from + i], (float) GET_FLOAT.invokeExact(s + 4L * i));
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          a[from + i] = Math.max(a[from + i], (float) GET_FLOAT.invokeExact(s + 4L * i));
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private static void reduceIntoF64(double[] a, int from, long s, int n, ReduceOp op) throws Throwable {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          a[from + i] += (double) GET_DOUBLE.invokeExact(s + 8L * i);
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          a[from + i] *= (double) GET_DOUBLE.invokeExact(s + 8L * i);
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          a[from + i] = Math.min(a[from + i], (double) GET_DOUBLE.invokeExact(s + 8L * i));
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          a[from + i] = Math.max(a[from + i], (double) GET_DOUBLE.invokeExact(s + 8L * i));
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private static void reduceF32(long d, long s, int n, ReduceOp op) throws Throwable {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          long at = 4L * i;
          float x = (float) GET_FLOAT.invokeExact(d + at);
          float y = (float) GET_FLOAT.invokeExact(s + at);
          PUT_FLOAT.invokeExact(d + at, x + y);
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          long at = 4L * i;
          float x = (float) GET_FLOAT.invokeExact(d + at);
          float y = (float) GET_FLOAT.invokeExact(s + at);
          PUT_FLOAT.invokeExact(d + at, x * y);
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          long at = 4L * i;
          float x = (float) GET_FLOAT.invokeExact(d + at);
          float y = (float) GET_FLOAT.invokeExact(s + at);
          PUT_FLOAT.invokeExact(d + at, Math.min(x, y));
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          long at = 4L * i;
          float x = (float) GET_FLOAT.invokeExact(d + at);
          float y = (float) GET_FLOAT.invokeExact(s + at);
          PUT_FLOAT.invokeExact(d + at, Math.max(x, y));
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private static void reduceF64(long d, long s, int n, ReduceOp op) throws Throwable {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          long at = 8L * i;
          double x = (double) GET_DOUBLE.invokeExact(d + at);
          double y = (double) GET_DOUBLE.invokeExact(s + at);
          PUT_DOUBLE.invokeExact(d + at, x + y);
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          long at = 8L * i;
          double x = (double) GET_DOUBLE.invokeExact(d + at);
          double y = (double) GET_DOUBLE.invokeExact(s + at);
          PUT_DOUBLE.invokeExact(d + at, x * y);
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          long at = 8L * i;
          double x = (double) GET_DOUBLE.invokeExact(d + at);
          double y = (double) GET_DOUBLE.invokeExact(s + at);
          PUT_DOUBLE.invokeExact(d + at, Math.min(x, y));
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          long at = 8L * i;
          double x = (double) GET_DOUBLE.invokeExact(d + at);
          double y = (double) GET_DOUBLE.invokeExact(s + at);
          PUT_DOUBLE.invokeExact(d + at, Math.max(x, y));
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private static void reduceI32(long d, long s, int n, ReduceOp op) throws Throwable {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          long at = 4L * i;
          int x = (int) GET_INT.invokeExact(d + at);
          int y = (int) GET_INT.invokeExact(s + at);
          PUT_INT.invokeExact(d + at, x + y);
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          long at = 4L * i;
          int x = (int) GET_INT.invokeExact(d + at);
          int y = (int) GET_INT.invokeExact(s + at);
          PUT_INT.invokeExact(d + at, x * y);
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          long at = 4L * i;
          int x = (int) GET_INT.invokeExact(d + at);
          int y = (int) GET_INT.invokeExact(s + at);
          PUT_INT.invokeExact(d + at, Math.min(x, y));
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          long at = 4L * i;
          int x = (int) GET_INT.invokeExact(d + at);
          int y = (int) GET_INT.invokeExact(s + at);
          PUT_INT.invokeExact(d + at, Math.max(x, y));
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private static void reduceI64(long d, long s, int n, ReduceOp op) throws Throwable {
    switch (op) {
      case SUM:
      case AVG:
        for (int i = 0; i < n; i++) {
          long at = 8L * i;
          long x = (long) GET_LONG.invokeExact(d + at);
          long y = (long) GET_LONG.invokeExact(s + at);
          PUT_LONG.invokeExact(d + at, x + y);
        }
        break;
      case PROD:
        for (int i = 0; i < n; i++) {
          long at = 8L * i;
          long x = (long) GET_LONG.invokeExact(d + at);
          long y = (long) GET_LONG.invokeExact(s + at);
          PUT_LONG.invokeExact(d + at, x * y);
        }
        break;
      case MIN:
        for (int i = 0; i < n; i++) {
          long at = 8L * i;
          long x = (long) GET_LONG.invokeExact(d + at);
          long y = (long) GET_LONG.invokeExact(s + at);
          PUT_LONG.invokeExact(d + at, Math.min(x, y));
        }
        break;
      case MAX:
        for (int i = 0; i < n; i++) {
          long at = 8L * i;
          long x = (long) GET_LONG.invokeExact(d + at);
          long y = (long) GET_LONG.invokeExact(s + at);
          PUT_LONG.invokeExact(d + at, Math.max(x, y));
        }
        break;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }
}
