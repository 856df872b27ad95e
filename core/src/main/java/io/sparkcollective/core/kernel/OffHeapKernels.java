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
 * <p>C2 on JDK 17 does not vectorise a loop over off-heap memory, and copying whole operands into scratch arrays
 * for the array loops costs more than it saves (three vector-sized streams through memory). So each combine runs
 * tile by tile: {@link #TILE_BYTES} of each operand copied into two small arrays of the calling thread (copies
 * the JVM makes with SIMD code), combined there by {@link Kernels}' array loop (SIMD code too) and copied back,
 * all inside the first-level cache. {@code KernelBenchmark}, the same sitting, the scalar loop over the memory
 * against tiles (us per call, 64 Ki floats): {@code foldInPlaceF32Direct} 18.5 against 11.4,
 * {@code segmentReduceF32Direct} 18.6 against 12.4, as fast as a vector in an array (12.4); at 1 Mi floats,
 * bound by memory, within their error. The sum alone over 8 Ki floats took 1.14-1.16x as long with tiles of 2 or
 * 8 KiB as with 4 KiB, 1.85x with 16 KiB.
 *
 * <p>The array loop computes the same Java operation on the same two operands as for vectors in arrays, so ranks
 * whose vectors live in arrays and ranks whose vectors live in buffers end with the same bits.
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
  /** {@code copyMemory(Object, long, Object, long, long)}: between an array and memory outside the heap. */
  private static final MethodHandle COPY;
  /** Offsets of element 0 of a float, double, int and long array. */
  private static final long FLOATS;
  private static final long DOUBLES;
  private static final long INTS;
  private static final long LONGS;
  /** Bytes of each operand a combine stages at a time: 4 KiB, well inside a first-level cache. */
  static final int TILE_BYTES = 4096;
  private static final ThreadLocal<Tiles> TILES = ThreadLocal.withInitial(Tiles::new);
  /** True if off-heap reductions run in place here; false: callers stage through arrays. */
  static final boolean AVAILABLE;
  /** The {@code sun.misc.Unsafe} instance where {@link #AVAILABLE} (for other kernels of this package), else null. */
  static final Object UNSAFE;

  static {
    MethodHandle getLong = null;
    MethodHandle copy = null;
    long[] bases = new long[4];
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
        getLong = lookup.findVirtual(type, "getLong", MethodType.methodType(long.class, Object.class, long.class))
            .bindTo(unsafe);
        copy = lookup.findVirtual(type, "copyMemory", MethodType.methodType(void.class, Object.class, long.class,
            Object.class, long.class, long.class)).bindTo(unsafe);
        MethodHandle base = lookup.findVirtual(type, "arrayBaseOffset", MethodType.methodType(int.class,
            Class.class)).bindTo(unsafe);
        Class<?>[] arrays = {float[].class, double[].class, int[].class, long[].class};
        for (int i = 0; i < arrays.length; i++) {
          bases[i] = (int) base.invoke(arrays[i]);
        }
        // Check the offset on buffers whose addresses the JDK states another way: a slice starts that far in.
        ByteBuffer probe = ByteBuffer.allocateDirect(16);
        if ((long) getLong.invoke(probe.duplicate().position(8).slice(), address)
            - (long) getLong.invoke(probe, address) != 8) {
          why = "java.nio.Buffer.address is not where it was looked for";
        }
      } catch (Throwable e) {
        why = e.toString();
      }
    }
    AVAILABLE = why == null;
    UNSAFE = AVAILABLE ? instance : null;
    ADDRESS = address;
    GET_BUFFER_LONG = getLong;
    COPY = copy;
    FLOATS = bases[0];
    DOUBLES = bases[1];
    INTS = bases[2];
    LONGS = bases[3];
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
    requireKernelType(type);
    try {
      tiled(type, null, dst, src, n, op, 0);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  private static void requireKernelType(Class<?> type) {
    if (type != float.class && type != double.class && type != int.class && type != long.class) {
      throw new IllegalArgumentException("no off-heap kernel for " + type);
    }
  }

  /**
   * {@code a[i] /= divisor} for i in [0, n), elements of {@code type} at byte address {@code a}: the last step of
   * AVG, as {@link Kernels#divide(float[], int, int, int)} and friends compute it.
   */
  static void divide(Class<?> type, long a, int n, int divisor) {
    requireKernelType(type);
    try {
      tiled(type, null, a, 0, n, null, divisor);
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
   * a live buffer; a range outside the array is refused.
   */
  static boolean reduceIntoArray(Object d, int from, long src, int n, ReduceOp op) {
    int length = d instanceof float[] ? ((float[]) d).length : d instanceof double[] ? ((double[]) d).length : -1;
    if (length >= 0 && (from < 0 || n < 0 || from > length - n)) {
      // Copies into the array are not bounds-checked: refuse a range outside it, as an array access would.
      throw new ArrayIndexOutOfBoundsException("elements [" + from + ", " + ((long) from + n) + ") of an array of "
          + length);
    }
    try {
      if (d instanceof float[]) {
        tiled(float.class, d, FLOATS + 4L * from, src, n, op, 0);
        return true;
      }
      if (d instanceof double[]) {
        tiled(double.class, d, DOUBLES + 8L * from, src, n, op, 0);
        return true;
      }
      return false;
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code op} over {@code n} elements of {@code type}, {@code dst} at {@code dBase}+{@code d} (an array and an
   * offset in it, or null and an address) and the source at address {@code s}; with {@code op} null, the
   * destination divided by {@code divisor} instead (no source). Tile by tile: the operands copied into this
   * thread's two {@link #TILE_BYTES} arrays, combined by {@link Kernels}' array loop and the result copied back.
   */
  private static void tiled(Class<?> type, Object dBase, long d, long s, int n, ReduceOp op, int divisor)
      throws Throwable {
    Tiles tiles = TILES.get();
    int size = elementBytes(type);
    Object x = tiles.get(type, 0);
    Object y = tiles.get(type, 1);
    long base = arrayBase(type);
    int per = TILE_BYTES / size;
    for (int c = 0; c < n; c += per) {
      int k = Math.min(per, n - c);
      long at = (long) c * size;
      long bytes = (long) k * size;
      COPY.invokeExact(dBase, d + at, x, base, bytes);
      if (op == null) {
        divide(x, k, divisor);
      } else {
        COPY.invokeExact((Object) null, s + at, y, base, bytes);
        combine(x, y, k, op);
      }
      COPY.invokeExact(x, base, dBase, d + at, bytes);
    }
  }

  private static void combine(Object x, Object y, int k, ReduceOp op) {
    if (x instanceof float[]) {
      Kernels.reduce((float[]) x, (float[]) y, k, op);
    } else if (x instanceof double[]) {
      Kernels.reduce((double[]) x, (double[]) y, k, op);
    } else if (x instanceof int[]) {
      Kernels.reduce((int[]) x, (int[]) y, k, op);
    } else {
      Kernels.reduce((long[]) x, (long[]) y, k, op);
    }
  }

  private static void divide(Object x, int k, int divisor) {
    if (x instanceof float[]) {
      Kernels.divide((float[]) x, 0, k, divisor);
    } else if (x instanceof double[]) {
      Kernels.divide((double[]) x, 0, k, divisor);
    } else if (x instanceof int[]) {
      Kernels.divide((int[]) x, 0, k, divisor);
    } else {
      Kernels.divide((long[]) x, 0, k, divisor);
    }
  }

  private static int elementBytes(Class<?> type) {
    return type == float.class || type == int.class ? 4 : 8;
  }

  private static long arrayBase(Class<?> type) {
    return type == float.class ? FLOATS : type == double.class ? DOUBLES : type == int.class ? INTS : LONGS;
  }

  /** A thread's two staging tiles per element type, made on first use. */
  private static final class Tiles {
    private final Object[][] byType = new Object[4][];

    Object get(Class<?> type, int slot) {
      int t = type == float.class ? 0 : type == double.class ? 1 : type == int.class ? 2 : 3;
      if (byType[t] == null) {
        byType[t] = t == 0 ? new Object[] {new float[TILE_BYTES / 4], new float[TILE_BYTES / 4]}
            : t == 1 ? new Object[] {new double[TILE_BYTES / 8], new double[TILE_BYTES / 8]}
            : t == 2 ? new Object[] {new int[TILE_BYTES / 4], new int[TILE_BYTES / 4]}
            : new Object[] {new long[TILE_BYTES / 8], new long[TILE_BYTES / 8]};
      }
      return byType[t][slot];
    }
  }
}
