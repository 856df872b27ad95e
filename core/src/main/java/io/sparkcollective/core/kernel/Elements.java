package io.sparkcollective.core.kernel;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * The vector an operation works on, as a primitive array range, with the three moves algorithms need
 * between it and a wire segment: write (send), read (copy received), reduce (combine received).
 *
 * <p>Arrays and little-endian {@link ByteBuffer}s (the wire's order; direct, heap or memory-mapped) are used
 * in place. A big-endian buffer or a half-precision one is first staged into a working array of the
 * communicator's {@link Scratch} ({@link #open}) and copied back by {@link #commit}; the half types are
 * widened to float there and summed in F32, travelling in their own 16 bits ({@link #openReduce}) or, in the
 * exact mode, as F32 rounded once on commit.
 */
public abstract class Elements {
  /** Number of elements. */
  protected final int length;
  /** Offset of element 0 in the backing array. */
  protected final int base;
  private final int wireCode;
  private final DataBuffer staged;
  /** For staged half-precision data: the scratch chunk {@link #commit} narrows through. */
  private short[] halfChunk;

  Elements(int base, int length, int wireCode, DataBuffer staged) {
    this.base = base;
    this.length = length;
    this.wireCode = wireCode;
    this.staged = staged;
  }

  /** Number of elements. */
  public final int length() {
    return length;
  }

  /** The dtype code frames carry (the user's type, also for half types sent as F32). */
  public final int wireCode() {
    return wireCode;
  }

  /** Bytes one element takes on the wire. */
  public abstract int wireElementBytes();

  /**
   * Copies elements {@code [off, off+n)} into {@code w}, from its {@link WireBuffer#start() start} (a frame's
   * own memory, or the place a transport lent it on the way to a peer), and sets its size.
   */
  public abstract void write(int off, int n, WireBuffer w);

  /** Overwrites elements {@code [off, off+n)} with {@code w}'s payload (one bulk copy for plain arrays). */
  public void read(int off, int n, WireBuffer w) {
    getWire(w, array(), base + off, n);
  }

  /**
   * {@link #reduce} whose results are final in this operation (nothing more is combined into the range): a wire
   * narrower than the elements rounds them at once, in the same pass where it can, instead of at the end.
   */
  public void reduceFinal(int off, int n, WireBuffer w, ReduceOp op, Scratch scratch) {
    reduce(off, n, w, op, scratch);
  }

  /**
   * {@code this[off+i] = op(this[off+i], w[i])} for i in [0, n); AVG combines as SUM. Float and double arrays fold
   * the wire's values from where they lie, tile by tile ({@link OffHeapKernels}); otherwise (other types, a wire
   * on the heap, a JVM without those kernels) the received values are copied into an array indexed like the
   * vector so that the kernel loop vectorises (see {@link Kernels}).
   */
  public void reduce(int off, int n, WireBuffer w, ReduceOp op, Scratch scratch) {
    int from = base + off;
    int end = base + length;
    if (inArray() && foldWire(from, n, w, op)) {
      return;
    }
    if (inArray() && end <= scratch.alignedMax()) {
      // Received values at the vector's own indices: one copy, then the same-index kernel in place. The array
      // covers the whole vector from the first segment on (one allocation per communicator, not one per new
      // highest index); longer vectors stage every segment instead of keeping a second copy of their size.
      Object in = aligned(scratch, end);
      getWire(w, in, from, n);
      reduceArrays(array(), in, from, n, op);
      return;
    }
    Object acc = staging(scratch, 0, n);
    Object in = staging(scratch, 1, n);
    getTo(off, n, acc, 0);
    getWire(w, in, 0, n);
    reduceArrays(acc, in, 0, n, op);
    putFrom(off, n, acc, 0);
  }

  /**
   * Folds the first {@code n} wire values into {@code [from, from+n)} of {@link #array()} where they lie, if the
   * wire is a direct buffer holding this array's element type and off-heap kernels are available; returns
   * whether it did.
   */
  private boolean foldWire(int from, int n, WireBuffer w, ReduceOp op) {
    ByteBuffer wire = w.bytes();
    long at = OffHeapKernels.address(wire);
    if (at == 0 || w.start() + (long) n * wireElementBytes() > wire.capacity()) {
      return false;
    }
    boolean done = OffHeapKernels.reduceIntoArray(array(), from, at + w.start(), n, op);
    Reference.reachabilityFence(wire);
    return done;
  }

  /** Divides elements {@code [off, off+n)} by {@code divisor} (the end of AVG). */
  public abstract void divide(int off, int n, int divisor);

  /**
   * Elements {@code [off, off+n)} as the wire's bytes where they lie in direct memory, for a transport to send
   * without a copy (valid until the next call on this vector), or null where the vector is not kept that way (arrays,
   * heap buffers, a wire format of its own). Null by default.
   */
  public ByteBuffer wireRange(int off, int n) {
    return null;
  }

  /**
   * True if writing a range to the wire right after reading it from a wire buffer gives that buffer's bytes back
   * (plain element types, byte copies): a received segment may then be passed on as it came. False where a
   * narrower wire rounds or keeps state per range.
   */
  public boolean forwardsVerbatim() {
    return true;
  }

  /**
   * True if a rank of the same process may read ranges of this vector in place (plain element arrays, no
   * narrower wire format): see {@link #reduceFrom} and {@link #copyFrom}.
   */
  public boolean shareable() {
    return false;
  }

  /**
   * Folds {@code [off, off+n)} of {@code src}, another rank's vector of the same kind ({@link #shareable}), into
   * the same range of this one: in place when both are laid out alike, else through segment-sized staging.
   */
  public final void reduceFrom(Elements peer, int off, int n, ReduceOp op, Scratch scratch) {
    Elements src = peer.forReader();
    if (inArray() && src.inArray() && src.base == base) {
      reduceArrays(array(), src.array(), base + off, n, op);
      changedInPlace(off, n);
      return;
    }
    if (foldInPlace(src, off, n, op)) {
      changedInPlace(off, n);
      return;
    }
    int chunk = Math.min(n, 1 << 14);
    Object acc = staging(scratch, 0, chunk);
    Object in = staging(scratch, 1, chunk);
    for (int done = 0; done < n; done += chunk) {
      int m = Math.min(chunk, n - done);
      src.getTo(off + done, m, in, 0);
      getTo(off + done, m, acc, 0);
      reduceArrays(acc, in, 0, m, op);
      putFrom(off + done, m, acc, 0);
    }
    changedInPlace(off, n);
  }

  /**
   * {@link #reduceFrom} where both vectors lie outside the heap: folds {@code src}'s range into this one's where
   * both lie and returns true, or returns false (nothing done) for the staged fold.
   */
  boolean foldInPlace(Elements src, int off, int n, ReduceOp op) {
    return false;
  }

  /**
   * {@code [off, off+n)} changed by another rank's values read in place ({@link #reduceFrom}, and by default
   * {@link #copyFrom}): nothing to do unless the wire is narrower than the elements.
   */
  void changedInPlace(int off, int n) {
  }

  /** Copies {@code [off, off+n)} of {@code src}, another rank's vector of the same kind, into the same range. */
  public final void copyFrom(Elements peer, int off, int n) {
    Elements src = peer.forReader();
    if (inArray()) {
      src.getTo(off, n, array(), base + off);
    } else if (src.inArray()) {
      putFrom(off, n, src.array(), src.base + off);
    } else {
      ((BufferElements) this).copyBuffer((BufferElements) src, off, n);
    }
    copiedInPlace(off, n);
  }

  /** {@code [off, off+n)} was overwritten by another rank's values read in place ({@link #copyFrom}). */
  void copiedInPlace(int off, int n) {
    changedInPlace(off, n);
  }

  /**
   * True if {@code other}, a rank of this process's vector, can be read in place by this one
   * ({@link #reduceFrom}, {@link #copyFrom}): both {@link #shareable} and of the same element type, whether in
   * an array or in a buffer.
   */
  public final boolean sharesWith(Elements other) {
    return shareable() && other.shareable() && elementType() == other.elementType();
  }

  /**
   * This vector as another thread may read it while its owner moves it: itself for arrays (reads keep no state),
   * views of its own for a buffer.
   */
  Elements forReader() {
    return this;
  }

  /** The primitive type of the elements as moved ({@code float.class} and so on; null if none). */
  Class<?> elementType() {
    return null;
  }

  /** {@code a[i] /= divisor} for i in [from, from+n), an array of this element type. */
  void divideArray(Object a, int from, int n, int divisor) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot divide");
  }

  /** True if the elements live in {@link #array()} (from {@link #base}); false for a vector in a buffer. */
  boolean inArray() {
    return shareable();
  }

  /** Copies elements {@code [off, off+n)} into {@code dst} (an array of this element type) from {@code at}. */
  void getTo(int off, int n, Object dst, int at) {
    System.arraycopy(array(), base + off, dst, at, n);
  }

  /** Overwrites elements {@code [off, off+n)} with {@code src} (an array of this element type) from {@code at}. */
  void putFrom(int off, int n, Object src, int at) {
    System.arraycopy(src, at, array(), base + off, n);
  }

  /** The primitive array behind a {@link #shareable} vector. */
  Object array() {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " is not shareable");
  }

  /** A 0-based scratch array of this element type. */
  Object staging(Scratch scratch, int slot, int n) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " is not shareable");
  }

  /** {@code d[i] = op(d[i], s[i])} for i in [from, from+n), arrays of this element type. */
  void reduceArrays(Object d, Object s, int from, int n, ReduceOp op) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " is not shareable");
  }

  /** An array of this element type at least {@code n} long, for values placed at their vector indices. */
  Object aligned(Scratch scratch, int n) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " has no aligned scratch");
  }

  /** Moves the first {@code n} wire values into {@code [off, off+n)} of {@code dst} (this element type). */
  void getWire(WireBuffer w, Object dst, int off, int n) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " has no wire transfer");
  }

  /**
   * Views {@code data} as elements: in place for arrays, through working copy {@code slot} of
   * {@code scratch} otherwise (then {@link #commit} must be called to write results back).
   */
  public static Elements open(DataBuffer data, Scratch scratch, int slot) {
    Object array = data.array();
    int n = data.length();
    int code = data.dtype().wireCode();
    if (array instanceof float[]) {
      return new FloatElements((float[]) array, data.offset(), n, code, null);
    } else if (array instanceof double[]) {
      return new DoubleElements((double[]) array, data.offset(), n, code, null);
    } else if (array instanceof int[]) {
      return new IntElements((int[]) array, data.offset(), n, code, null);
    } else if (array instanceof long[]) {
      return new LongElements((long[]) array, data.offset(), n, code, null);
    }
    ByteBuffer src = userView(data);
    if (src.order() == ByteOrder.LITTLE_ENDIAN && data.dtype() != DType.F16 && data.dtype() != DType.BF16) {
      return new BufferElements(src, n, code, kindOf(data.dtype(), code), scratch, null);
    }
    switch (data.dtype()) {
      case F32: {
        float[] w = scratch.workFloats(slot, n);
        src.asFloatBuffer().get(w, 0, n);
        return new FloatElements(w, 0, n, code, data);
      }
      case F64: {
        double[] w = scratch.workDoubles(slot, n);
        src.asDoubleBuffer().get(w, 0, n);
        return new DoubleElements(w, 0, n, code, data);
      }
      case I32: {
        int[] w = scratch.workInts(slot, n);
        src.asIntBuffer().get(w, 0, n);
        return new IntElements(w, 0, n, code, data);
      }
      case I64: {
        long[] w = scratch.workLongs(slot, n);
        src.asLongBuffer().get(w, 0, n);
        return new LongElements(w, 0, n, code, data);
      }
      case F16:
      case BF16:
        return new FloatElements(widened(data, scratch, slot), 0, n, code, data).narrowsThrough(scratch);
      default:
        throw new IllegalArgumentException("unknown dtype " + data.dtype());
    }
  }

  /** Half-precision values staged or committed per chunk of this many (bulk moves, then array conversions). */
  private static final int HALF_CHUNK = 4096;

  /** Half-precision {@code data} widened to F32 in working array {@code slot} of {@code scratch}. */
  private static float[] widened(DataBuffer data, Scratch scratch, int slot) {
    int length = data.length();
    java.nio.ShortBuffer src = userView(data).asShortBuffer();
    float[] w = scratch.workFloats(slot, length);
    boolean f16 = data.dtype() == DType.F16;
    short[] chunk = scratch.halfChunk(HALF_CHUNK);
    for (int i = 0; i < length; i += chunk.length) {
      int n = Math.min(chunk.length, length - i);
      src.get(chunk, 0, n);
      if (f16) {
        HalfFloats.fromF16At(chunk, 0, w, i, n);
      } else {
        HalfFloats.fromBf16At(chunk, 0, w, i, n);
      }
    }
    return w;
  }

  /**
   * Views {@code data} for a reduction (all-reduce, reduce-scatter) whose wire carries {@code wire}, or the
   * default for the data's type if {@code wire} is null:
   * <ul>
   *   <li>F32 data with a BF16 wire: sums in F32, every value sent as bfloat16 (wire compression);</li>
   *   <li>F16 or BF16 data by default: sums in F32, every value sent in the data's own 16 bits, so each
   *       partial sum is rounded to the type where it is sent on (half the bytes of the exact mode);</li>
   *   <li>F16 or BF16 data with an F32 wire (the exact mode), and every other type: as {@link #open}, sums
   *       sent in F32 and rounded once at the end.</li>
   * </ul>
   * Call {@link #beginWire} before the algorithm and {@link #endWire} after it, so that every rank ends with the
   * same bits.
   */
  public static Elements openReduce(DataBuffer data, DType wire, Scratch scratch, int slot) {
    DType dtype = data.dtype();
    if (dtype == DType.F32 && wire == DType.BF16) {
      Object array = data.array();
      int n = data.length();
      if (array instanceof float[]) {
        return new HalfWireElements((float[]) array, data.offset(), n, DType.F32_AS_BF16_WIRE_CODE, false, null,
            scratch);
      }
      float[] w = scratch.workFloats(slot, n);
      userView(data).asFloatBuffer().get(w, 0, n);
      return new HalfWireElements(w, 0, n, DType.F32_AS_BF16_WIRE_CODE, false, data, scratch);
    }
    if (dtype.isHalf() && wire == null) {
      return new HalfWireElements(widened(data, scratch, slot), 0, data.length(), dtype.sixteenBitWireCode(),
          dtype == DType.F16, data, scratch).narrowsThrough(scratch);
    }
    if (wire != null && wire != DType.F32 && wire != dtype) {
      throw new IllegalArgumentException(dtype + " data cannot travel as " + wire);
    }
    return open(data, scratch, slot);
  }

  /**
   * Views {@code data} for a collective that only copies (broadcast, all-gather, send/recv): like {@link #open},
   * except that F16 and BF16 travel as their own 16 bits, so every bit pattern (NaN payloads, signalling NaNs)
   * arrives unchanged and the wire carries half the bytes of the widened form. A little-endian buffer is used
   * in place; a big-endian one is staged (byte-swapped) and written back by {@link #commit}.
   */
  public static Elements openForCopy(DataBuffer data, Scratch scratch, int slot) {
    if (data.dtype() != DType.F16 && data.dtype() != DType.BF16) {
      return open(data, scratch, slot);
    }
    int n = data.length();
    ByteBuffer src = userView(data);
    Elements kind = new HalfBits();
    if (src.order() == ByteOrder.LITTLE_ENDIAN) {
      return new BufferElements(src, n, data.dtype().wireCode(), kind, scratch, null);
    }
    ByteBuffer work = scratch.workBytes(slot, 2 * n).order(ByteOrder.LITTLE_ENDIAN);
    work.asShortBuffer().put(src.asShortBuffer());
    return new BufferElements(work, n, data.dtype().wireCode(), kind, scratch, data);
  }

  /** The element kind of half-precision values moved as raw 16-bit patterns (copies only: no arithmetic). */
  static final class HalfBits extends Elements {
    @Override
    public boolean forwardsVerbatim() {
      return false;
    }

    HalfBits() {
      super(0, 0, 0, null);
    }

    @Override
    public int wireElementBytes() {
      return 2;
    }

    @Override
    Class<?> elementType() {
      return short.class;
    }

    @Override
    public void write(int off, int n, WireBuffer w) {
      throw new UnsupportedOperationException("HalfBits is a kind, not a vector");
    }

    @Override
    public void divide(int off, int n, int divisor) {
      throw new UnsupportedOperationException("half-precision copies are not reduced");
    }
  }

  /** An empty array vector of {@code dtype} (F32, F64, I32 or I64): the typed moves of a {@link BufferElements}. */
  private static Elements kindOf(DType dtype, int code) {
    switch (dtype) {
      case F32:
        return new FloatElements(new float[0], 0, 0, code, null);
      case F64:
        return new DoubleElements(new double[0], 0, 0, code, null);
      case I32:
        return new IntElements(new int[0], 0, 0, code, null);
      case I64:
        return new LongElements(new long[0], 0, 0, code, null);
      default:
        throw new IllegalArgumentException("no in-place buffer form for " + dtype);
    }
  }

  /**
   * Rounds elements {@code [off, off+n)} to what the wire can carry (a no-op unless the wire is narrower than
   * the elements).
   */
  public void roundToWire(int off, int n) {
  }

  /**
   * {@link #roundToWire}, except that a narrower wire may round each value of {@code [off, off+n)} at its first
   * move instead of now (in the pass of that move); nothing outside the range is touched either way.
   */
  public void roundToWireOnMove(int off, int n) {
    roundToWire(off, n);
  }

  /**
   * Rounds whatever of {@code [off, off+n)} does not hold what the wire carries yet, and nothing outside the range:
   * afterwards ranks of this process may copy the range as it stands ({@link #copyFrom}).
   */
  public void settleWire(int off, int n) {
    roundToWire(off, n);
  }

  /**
   * Before an all-reduce: every element rounded to what the wire carries (so that what a rank sends equals
   * its own copy). A narrower wire may defer this to each range's first move, where it overlaps the traffic.
   */
  public void beginWire() {
    roundToWire(0, length);
  }

  /**
   * {@link #beginWire} for an algorithm whose ranks of one process read each other's vectors in place: the whole
   * vector is rounded now, before any of it is offered, so that no later rounding of a rank's own ranges can
   * touch values another rank is reading.
   */
  public void beginWireBeforeSharing() {
    beginWire();
  }

  /** After an all-reduce: every element rounded to what the wire carries (the owners' sums included). */
  public void endWire() {
    roundToWire(0, length);
  }

  /** Raw bytes (object collectives): copy-only, no reduction. */
  public static Elements ofBytes(byte[] data) {
    return new ByteElements(data, 0, data.length);
  }

  final Elements narrowsThrough(Scratch scratch) {
    halfChunk = scratch.halfChunk(HALF_CHUNK);
    return this;
  }

  /** Writes a staged working copy back to the caller's buffer; nothing for arrays used in place. */
  public final void commit() {
    if (staged == null) {
      return;
    }
    ByteBuffer dst = userView(staged);
    if (this instanceof BufferElements) { // a big-endian half-precision copy, staged as little-endian bits
      dst.asShortBuffer().put(((BufferElements) this).range(0, length).asShortBuffer());
      return;
    }
    switch (staged.dtype()) {
      case F32:
        dst.asFloatBuffer().put(((FloatElements) this).array, 0, length);
        break;
      case F64:
        dst.asDoubleBuffer().put(((DoubleElements) this).array, 0, length);
        break;
      case I32:
        dst.asIntBuffer().put(((IntElements) this).array, 0, length);
        break;
      case I64:
        dst.asLongBuffer().put(((LongElements) this).array, 0, length);
        break;
      case F16:
      case BF16: {
        float[] w = ((FloatElements) this).array;
        boolean f16 = staged.dtype() == DType.F16;
        java.nio.ShortBuffer out = dst.asShortBuffer();
        short[] chunk = halfChunk;
        for (int i = 0; i < length; i += chunk.length) {
          int n = Math.min(chunk.length, length - i);
          if (f16) {
            HalfFloats.toF16(w, i, chunk, n);
          } else {
            HalfFloats.toBf16(w, i, chunk, n);
          }
          out.put(chunk, 0, n);
        }
        break;
      }
      default:
        throw new IllegalArgumentException("unknown dtype " + staged.dtype());
    }
  }

  /** The caller's bytes as a buffer starting at element 0, in the caller's byte order. */
  private static ByteBuffer userView(DataBuffer data) {
    ByteBuffer user = data.byteBuffer();
    ByteOrder order = user.order();
    ByteBuffer view = user.duplicate();
    view.limit(data.offset() + (int) data.byteLength()).position(data.offset());
    return view.slice().order(order);
  }

  // Relative bulk transfers from the payload's start in the wire buffer's cached typed views: on JDK 17 these take
  // the memory-copy path for direct native-order buffers, where the absolute-index forms copy element by
  // element.

  private static void get(WireBuffer w, float[] dst, int off, int n) {
    FloatBuffer v = w.floats();
    v.clear().position(w.start() / 4);
    v.get(dst, off, n);
  }

  private static void put(WireBuffer w, float[] src, int off, int n) {
    FloatBuffer v = w.floats();
    v.clear().position(w.start() / 4);
    v.put(src, off, n);
  }

  private static void get(WireBuffer w, double[] dst, int off, int n) {
    DoubleBuffer v = w.doubles();
    v.clear().position(w.start() / 8);
    v.get(dst, off, n);
  }

  private static void put(WireBuffer w, double[] src, int off, int n) {
    DoubleBuffer v = w.doubles();
    v.clear().position(w.start() / 8);
    v.put(src, off, n);
  }

  private static void get(WireBuffer w, int[] dst, int off, int n) {
    IntBuffer v = w.ints();
    v.clear().position(w.start() / 4);
    v.get(dst, off, n);
  }

  private static void put(WireBuffer w, int[] src, int off, int n) {
    IntBuffer v = w.ints();
    v.clear().position(w.start() / 4);
    v.put(src, off, n);
  }

  private static void get(WireBuffer w, long[] dst, int off, int n) {
    LongBuffer v = w.longs();
    v.clear().position(w.start() / 8);
    v.get(dst, off, n);
  }

  private static void put(WireBuffer w, long[] src, int off, int n) {
    LongBuffer v = w.longs();
    v.clear().position(w.start() / 8);
    v.put(src, off, n);
  }

  static class FloatElements extends Elements {
    final float[] array;

    @Override
    public boolean shareable() {
      return true;
    }

    @Override
    Object array() {
      return array;
    }

    @Override
    Object staging(Scratch scratch, int slot, int n) {
      return scratch.segmentFloats(slot, n);
    }

    @Override
    void reduceArrays(Object d, Object s, int from, int n, ReduceOp op) {
      Kernels.reduce((float[]) d, (float[]) s, from, n, op);
    }

    @Override
    Object aligned(Scratch scratch, int n) {
      return scratch.alignedFloats(n);
    }

    @Override
    void getWire(WireBuffer w, Object dst, int off, int n) {
      get(w, (float[]) dst, off, n);
    }

    @Override
    Class<?> elementType() {
      return float.class;
    }

    @Override
    void divideArray(Object a, int from, int n, int divisor) {
      Kernels.divide((float[]) a, from, n, divisor);
    }

    FloatElements(float[] array, int base, int length, int wireCode, DataBuffer staged) {
      super(base, length, wireCode, staged);
      this.array = array;
    }

    @Override
    public int wireElementBytes() {
      return Float.BYTES;
    }

    @Override
    public void write(int off, int n, WireBuffer w) {
      put(w, array, base + off, n);
      w.size(n * Float.BYTES);
    }

    @Override
    public void divide(int off, int n, int divisor) {
      Kernels.divide(array, base + off, n, divisor);
    }
  }

  /**
   * Where a bfloat16-wire vector's rounding stands, in tiles of 2^10 elements, two bits each: "rounded" (clear
   * while the tile's values still await a rounding that is theirs already: its inputs before their first move,
   * or values sent as they stood, whose rounding is what the peer received) and "dirty" (a reduction left F32
   * sums in it that no later move rounded). The bits live in words the operation's scratch lends; one thread
   * moves an operation's elements.
   */
  static final class WireTiles {
    /**
     * Tiles of 2^10 elements: a move that covers a tile only in part rounds it at once (or writes back what it
     * sent), so tiles much shorter than a segment leave little of it to that path.
     */
    private static final int SHIFT = 10;
    private final int length;
    private final int count;
    private long[] marks;

    WireTiles(int length) {
      this.length = length;
      this.count = (length + (1 << SHIFT) - 1) >>> SHIFT;
    }

    /** Words enough for every tile's two bits. */
    int words() {
      return (2 * count + 63) >>> 6;
    }

    /** Starts tracking in {@code cleared} (zeroed, {@link #words} long); {@code null} stops it. */
    void track(long[] cleared) {
      marks = cleared;
    }

    boolean tracking() {
      return marks != null;
    }

    int count() {
      return count;
    }

    int first(int off) {
      return off >>> SHIFT;
    }

    /** The last tile of {@code [off, off+n)}, n > 0. */
    int last(int off, int n) {
      return (off + n - 1) >>> SHIFT;
    }

    int start(int t) {
      return t << SHIFT;
    }

    int end(int t) {
      return Math.min(length, (t + 1) << SHIFT);
    }

    boolean rounded(int t) {
      return bit(2 * t);
    }

    void setRounded(int t) {
      marks[(2 * t) >>> 6] |= 1L << (2 * t);
    }

    /** Tile {@code t}'s values were sent as they stand: rounded where they are next used, not now. */
    void setPending(int t) {
      marks[(2 * t) >>> 6] &= ~(1L << (2 * t));
      marks[(2 * t + 1) >>> 6] &= ~(1L << (2 * t + 1));
    }

    /** Whether {@code [off, off+n)} covers tile {@code t} whole. */
    boolean covers(int off, int n, int t) {
      return off <= start(t) && off + n >= end(t);
    }

    /** The tiles {@code [off, off+n)} covers whole now hold wire values: rounded, clean. */
    void settle(int off, int n) {
      if (marks == null || n == 0) {
        return;
      }
      for (int t = first(off); t <= last(off, n); t++) {
        if (covers(off, n, t)) {
          setRounded(t);
          marks[(2 * t + 1) >>> 6] &= ~(1L << (2 * t + 1));
        }
      }
    }

    boolean dirty(int t) {
      return bit(2 * t + 1);
    }

    /** Marks the tiles of {@code [off, off+n)} dirty (on), or clean (off) where the range covers them whole. */
    void setDirty(int off, int n, boolean on) {
      if (marks == null || n == 0) {
        return;
      }
      for (int t = first(off); t <= last(off, n); t++) {
        int b = 2 * t + 1;
        if (on) {
          marks[b >>> 6] |= 1L << b;
        } else if (covers(off, n, t)) {
          marks[b >>> 6] &= ~(1L << b);
        }
      }
    }

    private boolean bit(int b) {
      return (marks[b >>> 6] & (1L << b)) != 0;
    }
  }

  /**
   * F32 elements that travel as 16-bit values (bfloat16 or binary16): half the bytes on the wire, sums still
   * formed in F32, each partial sum rounded to the wire's type where it is sent on. Ranks of one process read
   * each other's F32 values in place, as for plain F32 data.
   *
   * <p>{@link #beginWire} defers the rounding of the whole vector to each tile's first move, so it overlaps
   * the traffic instead of preceding it; {@link #endWire} rounds only the tiles a reduction left dirty and
   * those that never moved. What a rank sends is what its own copy must equal: a write that covers a tile whole
   * leaves the tile's values as they are and their rounding pending (a later sum rounds them in its own pass, a
   * read that overwrites the tile never needs it, the end rounds what is left), since rounding is idempotent and
   * the narrowing sent exactly their rounding. Partly covered tiles are rounded in place at the write. The sums
   * an algorithm completes last are rounded in the pass that forms them ({@link #reduceFinal}). Where ranks of
   * one process read each other's values in place ({@link #beginWireBeforeSharing}), a tile a write covers whole
   * lies in the range the rank moves across processes, which no other rank reads until the rank offers it, and
   * the rank settles that range ({@link #settleWire}) before it offers it for a copy.
   */
  static final class HalfWireElements extends FloatElements {
    @Override
    public boolean forwardsVerbatim() {
      return false;
    }

    private final boolean f16;
    private final Scratch scratch;
    private final WireTiles tiles;

    HalfWireElements(float[] array, int base, int length, int wireCode, boolean f16, DataBuffer staged,
        Scratch scratch) {
      super(array, base, length, wireCode, staged);
      this.f16 = f16;
      this.scratch = scratch;
      this.tiles = new WireTiles(length);
    }

    private void roundTile(int t) {
      roundToWire(tiles.start(t), tiles.end(t) - tiles.start(t));
    }

    /** Rounds the inputs of every tile of {@code [off, off+n)} that has not moved yet. */
    private void firstMove(int off, int n) {
      if (!tiles.tracking() || n == 0) {
        return;
      }
      for (int t = tiles.first(off); t <= tiles.last(off, n); t++) {
        if (roundsInPass(t, off, n)) {
          roundTile(t);
        }
      }
    }

    /**
     * Records a move of {@code [off, off+n)} through tile {@code t}. True when it is the tile's first move and
     * covers it whole: the caller then rounds the tile's inputs in its own pass. A tile moved for the first time
     * in part is rounded here first.
     */
    private boolean roundsInPass(int t, int off, int n) {
      if (tiles.rounded(t)) {
        return false;
      }
      tiles.setRounded(t);
      if (tiles.covers(off, n, t)) {
        return true;
      }
      roundTile(t);
      return false;
    }

    @Override
    public void beginWire() {
      tiles.track(scratch.clearedWords(tiles.words()));
    }

    /**
     * Nothing is rounded up front: ranks of one process fold each other's F32 values as they are, and values are
     * rounded where they leave the process (a range the algorithm hands to {@link #roundToWireOnMove} before its
     * phase across processes, rounded at its first move there), where they come back (a read, the last sums) and
     * where an owner settles its range before the ranks of its process copy it ({@link #settleWire}). Every
     * rounding a rank makes is then of a range no other rank reads at that time: its own block before it offers
     * it, or the whole vector at the end, once every range it offered has been read. Marked rounded, no tile
     * outside such a range is rounded at a first move (which could touch the neighbouring block another rank is
     * reading).
     */
    @Override
    public void beginWireBeforeSharing() {
      tiles.track(scratch.clearedWords(tiles.words()));
      for (int t = 0; t < tiles.count(); t++) {
        tiles.setRounded(t);
      }
    }

    /**
     * Ranks of one process read each other's F32 values in place (no rounding between them); what they sum in is
     * rounded where it next goes on the wire, or at the end (what they copy in is settled already:
     * {@link #copiedInPlace}).
     */
    @Override
    void changedInPlace(int off, int n) {
      if (tiles.tracking() && n > 0) {
        tiles.setDirty(off, n, true);
      }
    }

    @Override
    public void endWire() {
      if (!tiles.tracking()) {
        roundToWire(0, length);
        return;
      }
      for (int t = 0; t < tiles.count(); t++) {
        if (!tiles.rounded(t) || tiles.dirty(t)) {
          roundTile(t);
        }
      }
      tiles.track(null);
    }

    /** The first {@code n} wire values, moved out in bulk (element-wise reads of a direct buffer are slow). */
    private short[] wireValues(WireBuffer w, int n) {
      short[] t = scratch.segmentShorts(n);
      java.nio.ShortBuffer in = w.shorts();
      in.clear().position(w.start() / Short.BYTES);
      in.get(t, 0, n);
      return t;
    }

    /**
     * A bfloat16 segment's words ({@link Bf16Pairs}), moved out in bulk into a scratch array; its odd last value
     * in {@link #lastWire}.
     */
    private int[] wireWords(WireBuffer w, int n) {
      int h = Bf16Pairs.words(n);
      int[] t = scratch.segmentInts(0, h);
      java.nio.IntBuffer in = w.ints();
      in.clear().position(w.start() / Integer.BYTES);
      in.get(t, 0, h);
      lastWire = (n & 1) != 0 ? w.shorts().get(w.start() / Short.BYTES + 2 * h) : 0;
      return t;
    }

    /** The odd last value of the segment {@link #wireWords} moved out last. */
    private short lastWire;

    /**
     * An array indexed like the vector ({@code base + element}) into which received bfloat16 values are widened,
     * so that the sum over them vectorises; null where the Vector API sums the words in one pass (no array needed)
     * or the vector is too long to keep one (then staged in small chunks, see {@link Bf16Pairs#sum}).
     */
    private float[] widened() {
      return !HalfFloats.VECTORS && base + length <= scratch.alignedMax() ? scratch.alignedFloats(base + length)
          : null;
    }

    /**
     * {@code [from, from+m)} of the segment at {@code off} of {@code n} elements summed from its words: the inputs
     * rounded first ({@code inputs}), the sums rounded after ({@code round}).
     */
    private void sumWords(int[] words, int off, int n, int from, int m, float[] in, boolean inputs, boolean round) {
      int chunk = Math.min(m, Bf16Pairs.CHUNK);
      Bf16Pairs.sum(words, lastWire, off, n, from, m, array, base, in, scratch.segmentFloats(0, chunk),
          scratch.segmentFloats(1, chunk), inputs, round);
    }

    /** {@code array[base + from + i] = wide(in[at + i])} for i in [0, n): binary16 (bfloat16 travels in pairs). */
    private void widen(short[] in, int at, int from, int n) {
      HalfFloats.fromF16At(in, at, array, base + from, n);
    }

    @Override
    public int wireElementBytes() {
      return Short.BYTES;
    }

    @Override
    public void write(int off, int n, WireBuffer w) {
      if (tiles.tracking() && n > 0) {
        // A tile this write covers whole keeps its values, their rounding pending (see the class comment); a dirty
        // tile it covers in part gets the narrowed values back below.
        for (int k = tiles.first(off); k <= tiles.last(off, n); k++) {
          if (tiles.covers(off, n, k)) {
            if (!tiles.rounded(k) || tiles.dirty(k)) {
              tiles.setPending(k);
            }
          } else if (!tiles.rounded(k)) {
            roundTile(k);
            tiles.setRounded(k);
          }
        }
      }
      if (!f16) {
        writeBf16(off, n, w);
        return;
      }
      // Narrowed in a heap array, then moved to the frame in bulk (element-wise puts into a direct buffer are slow).
      short[] t = scratch.segmentShorts(n);
      HalfFloats.toF16(array, base + off, t, n);
      if (tiles.tracking() && n > 0) {
        for (int k = tiles.first(off); k <= tiles.last(off, n); k++) {
          if (tiles.dirty(k)) {
            int from = Math.max(off, tiles.start(k));
            widen(t, from - off, from, Math.min(off + n, tiles.end(k)) - from);
          }
        }
        tiles.setDirty(off, n, false);
      }
      java.nio.ShortBuffer out = w.shorts();
      out.clear().position(w.start() / Short.BYTES);
      out.put(t, 0, n);
      w.size(n * Short.BYTES);
    }

    /** {@link #write} for the bfloat16 wire: the segment narrowed into words ({@link Bf16Pairs}). */
    private void writeBf16(int off, int n, WireBuffer w) {
      int h = Bf16Pairs.words(n);
      int[] t = scratch.segmentInts(0, h);
      Bf16Pairs.narrow(array, base + off, h, t);
      short last = (n & 1) != 0 ? HalfFloats.floatToBf16(array[base + off + 2 * h]) : 0;
      if (tiles.tracking() && n > 0) {
        for (int k = tiles.first(off); k <= tiles.last(off, n); k++) {
          if (tiles.dirty(k)) {
            int from = Math.max(off, tiles.start(k));
            Bf16Pairs.unpack(t, last, off, n, from, Math.min(off + n, tiles.end(k)) - from, array, base);
          }
        }
        tiles.setDirty(off, n, false);
      }
      java.nio.IntBuffer out = w.ints();
      out.clear().position(w.start() / Integer.BYTES);
      out.put(t, 0, h);
      if ((n & 1) != 0) {
        w.shorts().put(w.start() / Short.BYTES + 2 * h, last);
      }
      w.size(n * Short.BYTES);
    }

    @Override
    public void read(int off, int n, WireBuffer w) {
      if (f16) {
        widen(wireValues(w, n), 0, off, n);
      } else {
        Bf16Pairs.unpack(wireWords(w, n), lastWire, off, n, off, n, array, base);
      }
      tiles.settle(off, n);
    }

    /** Whether a reduction is a bfloat16 sum, which rounds what it must in the pass that forms it. */
    private boolean fusedSum(int n, ReduceOp op) {
      return !f16 && (op == ReduceOp.SUM || op == ReduceOp.AVG) && tiles.tracking() && n > 0;
    }

    /**
     * The received bfloat16 values summed in, tile by tile: a tile that has not moved and that this sum covers
     * whole has its inputs rounded in the same pass; with {@code last} the sums are rounded in it too.
     */
    private void sumBf16(int off, int n, WireBuffer w, boolean last) {
      int[] words = wireWords(w, n);
      float[] in = widened();
      for (int k = tiles.first(off); k <= tiles.last(off, n); k++) {
        int from = Math.max(off, tiles.start(k));
        int m = Math.min(off + n, tiles.end(k)) - from;
        sumWords(words, off, n, from, m, in, roundsInPass(k, off, n), last);
      }
      tiles.setDirty(off, n, true);
    }

    @Override
    public void reduce(int off, int n, WireBuffer w, ReduceOp op, Scratch scratch) {
      if (fusedSum(n, op)) {
        sumBf16(off, n, w, false);
        return;
      }
      firstMove(off, n);
      tiles.setDirty(off, n, true);
      if (op == ReduceOp.SUM || op == ReduceOp.AVG) {
        if (f16) {
          HalfFloats.addF16(wireValues(w, n), array, base + off, n);
        } else {
          sumWords(wireWords(w, n), off, n, off, n, widened(), false, false);
        }
        return;
      }
      float[] acc = scratch.segmentFloats(0, n);
      float[] in = scratch.segmentFloats(1, n);
      System.arraycopy(array, base + off, acc, 0, n);
      if (f16) {
        HalfFloats.fromF16At(wireValues(w, n), 0, in, 0, n);
      } else {
        Bf16Pairs.unpack(wireWords(w, n), lastWire, off, n, off, n, in, -off);
      }
      Kernels.reduce(acc, in, n, op);
      System.arraycopy(acc, 0, array, base + off, n);
    }

    /**
     * A bfloat16 sum rounds the sums in the pass that forms them (and the rank's own inputs too, at a tile's first
     * move); otherwise the range is rounded right after the reduction, while it is in the cache. Only the range
     * is rounded: tiles it covers whole are settled, the parts of others are rounded again at the end.
     */
    @Override
    public void reduceFinal(int off, int n, WireBuffer w, ReduceOp op, Scratch scratch) {
      if (fusedSum(n, op)) {
        sumBf16(off, n, w, true);
        tiles.settle(off, n);
      } else {
        reduce(off, n, w, op, scratch);
        roundToWire(off, n);
      }
    }

    @Override
    public void roundToWire(int off, int n) {
      roundValues(off, n);
      tiles.settle(off, n);
    }

    private void roundValues(int off, int n) {
      if (f16) {
        HalfFloats.roundToF16(array, base + off, n);
      } else {
        Bf16Pairs.round(array, base + off, n);
      }
    }

    /** Another rank's values copied in are wire values already: their owner settled them before offering them. */
    @Override
    void copiedInPlace(int off, int n) {
      tiles.settle(off, n);
    }

    /**
     * The tiles the range covers whole await their rounding at their first move (in that move's pass, as at the
     * start of an all-reduce); the parts of the tiles at its ends that lie in the range are rounded now, since a
     * first move rounds a tile whole and so could touch values outside the range.
     */
    @Override
    public void roundToWireOnMove(int off, int n) {
      if (!tiles.tracking() || n == 0) {
        roundToWire(off, n);
        return;
      }
      for (int t = tiles.first(off); t <= tiles.last(off, n); t++) {
        if (tiles.covers(off, n, t)) {
          tiles.setPending(t);
        } else {
          int from = Math.max(off, tiles.start(t));
          roundValues(from, Math.min(off + n, tiles.end(t)) - from);
        }
      }
    }

    /**
     * Rounds, within the range, the tiles whose values are not all wire values yet: not rounded (inputs, or values
     * sent with their rounding pending) or dirty (sums). Runs of such tiles are rounded in one call.
     */
    @Override
    public void settleWire(int off, int n) {
      if (!tiles.tracking() || n == 0) {
        roundToWire(off, n);
        return;
      }
      int run = -1;
      int last = tiles.last(off, n);
      for (int t = tiles.first(off); t <= last + 1; t++) {
        boolean open = t <= last && (!tiles.rounded(t) || tiles.dirty(t));
        if (open && run < 0) {
          run = Math.max(off, tiles.start(t));
        } else if (!open && run >= 0) {
          int to = Math.min(off + n, tiles.start(t));
          roundValues(run, to - run);
          run = -1;
        }
      }
      tiles.settle(off, n);
    }
  }

  static final class DoubleElements extends Elements {
    final double[] array;

    @Override
    public boolean shareable() {
      return true;
    }

    @Override
    Object array() {
      return array;
    }

    @Override
    Object staging(Scratch scratch, int slot, int n) {
      return scratch.segmentDoubles(slot, n);
    }

    @Override
    void reduceArrays(Object d, Object s, int from, int n, ReduceOp op) {
      Kernels.reduce((double[]) d, (double[]) s, from, n, op);
    }

    @Override
    Object aligned(Scratch scratch, int n) {
      return scratch.alignedDoubles(n);
    }

    @Override
    void getWire(WireBuffer w, Object dst, int off, int n) {
      get(w, (double[]) dst, off, n);
    }

    @Override
    Class<?> elementType() {
      return double.class;
    }

    @Override
    void divideArray(Object a, int from, int n, int divisor) {
      Kernels.divide((double[]) a, from, n, divisor);
    }

    DoubleElements(double[] array, int base, int length, int wireCode, DataBuffer staged) {
      super(base, length, wireCode, staged);
      this.array = array;
    }

    @Override
    public int wireElementBytes() {
      return Double.BYTES;
    }

    @Override
    public void write(int off, int n, WireBuffer w) {
      put(w, array, base + off, n);
      w.size(n * Double.BYTES);
    }

    @Override
    public void divide(int off, int n, int divisor) {
      Kernels.divide(array, base + off, n, divisor);
    }
  }

  static final class IntElements extends Elements {
    final int[] array;

    @Override
    public boolean shareable() {
      return true;
    }

    @Override
    Object array() {
      return array;
    }

    @Override
    Object staging(Scratch scratch, int slot, int n) {
      return scratch.segmentInts(slot, n);
    }

    @Override
    void reduceArrays(Object d, Object s, int from, int n, ReduceOp op) {
      Kernels.reduce((int[]) d, (int[]) s, from, n, op);
    }

    @Override
    Object aligned(Scratch scratch, int n) {
      return scratch.alignedInts(n);
    }

    @Override
    void getWire(WireBuffer w, Object dst, int off, int n) {
      get(w, (int[]) dst, off, n);
    }

    @Override
    Class<?> elementType() {
      return int.class;
    }

    @Override
    void divideArray(Object a, int from, int n, int divisor) {
      Kernels.divide((int[]) a, from, n, divisor);
    }

    IntElements(int[] array, int base, int length, int wireCode, DataBuffer staged) {
      super(base, length, wireCode, staged);
      this.array = array;
    }

    @Override
    public int wireElementBytes() {
      return Integer.BYTES;
    }

    @Override
    public void write(int off, int n, WireBuffer w) {
      put(w, array, base + off, n);
      w.size(n * Integer.BYTES);
    }

    @Override
    public void divide(int off, int n, int divisor) {
      Kernels.divide(array, base + off, n, divisor);
    }
  }

  static final class LongElements extends Elements {
    final long[] array;

    @Override
    public boolean shareable() {
      return true;
    }

    @Override
    Object array() {
      return array;
    }

    @Override
    Object staging(Scratch scratch, int slot, int n) {
      return scratch.segmentLongs(slot, n);
    }

    @Override
    void reduceArrays(Object d, Object s, int from, int n, ReduceOp op) {
      Kernels.reduce((long[]) d, (long[]) s, from, n, op);
    }

    @Override
    Object aligned(Scratch scratch, int n) {
      return scratch.alignedLongs(n);
    }

    @Override
    void getWire(WireBuffer w, Object dst, int off, int n) {
      get(w, (long[]) dst, off, n);
    }

    @Override
    Class<?> elementType() {
      return long.class;
    }

    @Override
    void divideArray(Object a, int from, int n, int divisor) {
      Kernels.divide((long[]) a, from, n, divisor);
    }

    LongElements(long[] array, int base, int length, int wireCode, DataBuffer staged) {
      super(base, length, wireCode, staged);
      this.array = array;
    }

    @Override
    public int wireElementBytes() {
      return Long.BYTES;
    }

    @Override
    public void write(int off, int n, WireBuffer w) {
      put(w, array, base + off, n);
      w.size(n * Long.BYTES);
    }

    @Override
    public void divide(int off, int n, int divisor) {
      Kernels.divide(array, base + off, n, divisor);
    }
  }

  /**
   * A vector used in place in a little-endian {@link ByteBuffer} (the wire's order), e.g. memory another process
   * maps too: moves to and from the wire are byte copies, and a reduction stages one segment of both operands
   * into scratch arrays for the kernel (as arrays longer than the aligned scratch do), so no copy of the whole
   * vector is made. The typed hooks come from {@code kind}, an empty array vector of the same element type.
   */
  static final class BufferElements extends Elements {
    private static final int CHUNK = 1 << 14;
    /** The owner's working view: its position and limit move with every transfer. */
    private final ByteBuffer bytes;
    /**
     * The same memory as made, never moved: readers of other threads take their views from this one, since a
     * duplicate of {@link #bytes} would copy a position and limit that the owner may be changing meanwhile.
     */
    private final ByteBuffer pristine;
    private final Elements kind;
    private final Scratch scratch;
    private final int elementBytes;
    private java.nio.Buffer typed;

    /**
     * Where element 0 lies when the buffer is direct and {@link OffHeapKernels} combine it in place (every
     * element inside the buffer); 0 otherwise, and combines stage through arrays.
     */
    private final long address;

    BufferElements(ByteBuffer littleEndian, int length, int wireCode, Elements kind, Scratch scratch,
        DataBuffer staged) {
      super(0, length, wireCode, staged);
      this.bytes = littleEndian;
      this.pristine = littleEndian.duplicate();
      this.kind = kind;
      this.scratch = scratch;
      this.elementBytes = kind.wireElementBytes();
      this.address = (long) length * elementBytes <= pristine.capacity() ? OffHeapKernels.address(pristine) : 0;
    }

    /** True if combines into this vector run where it lies ({@link OffHeapKernels}), not through staging. */
    boolean combinesInPlace() {
      return address != 0;
    }

    /** True if {@code [off, off+n)} is a range of this vector. */
    private boolean holds(int off, int n) {
      return off >= 0 && n >= 0 && (long) off + n <= length;
    }

    /** Received values folded in where this vector lies, when both it and the wire are outside the heap. */
    @Override
    public void reduce(int off, int n, WireBuffer w, ReduceOp op, Scratch scratch) {
      ByteBuffer wire = w.bytes();
      long from = address == 0 ? 0 : OffHeapKernels.address(wire);
      if (from != 0 && holds(off, n) && w.start() + (long) n * elementBytes <= wire.capacity()) {
        OffHeapKernels.reduce(kind.elementType(), address + (long) off * elementBytes, from + w.start(), n, op);
        Reference.reachabilityFence(pristine);
        Reference.reachabilityFence(wire);
        return;
      }
      super.reduce(off, n, w, op, scratch);
    }

    @Override
    boolean foldInPlace(Elements src, int off, int n, ReduceOp op) {
      if (address == 0 || !(src instanceof BufferElements)) {
        return false;
      }
      BufferElements peer = (BufferElements) src;
      if (peer.address == 0 || peer.kind.elementType() != kind.elementType() || !holds(off, n)
          || !peer.holds(off, n)) {
        return false;
      }
      long at = (long) off * elementBytes;
      OffHeapKernels.reduce(kind.elementType(), address + at, peer.address + at, n, op);
      Reference.reachabilityFence(pristine);
      Reference.reachabilityFence(peer.pristine);
      return true;
    }

    @Override
    public boolean shareable() {
      return true;
    }

    @Override
    boolean inArray() {
      return false;
    }

    @Override
    Class<?> elementType() {
      return kind.elementType();
    }

    @Override
    public int wireElementBytes() {
      return elementBytes;
    }

    private ByteBuffer range(int off, int n) {
      bytes.clear().limit((off + n) * elementBytes).position(off * elementBytes);
      return bytes;
    }

    @Override
    public void write(int off, int n, WireBuffer w) {
      w.view(n * elementBytes).put(range(off, n));
      w.size(n * elementBytes);
    }

    /** The bytes are the wire's already (little-endian, no conversion): direct memory is sent where it lies. */
    @Override
    public ByteBuffer wireRange(int off, int n) {
      return bytes.isDirect() && holds(off, n) ? range(off, n) : null;
    }

    @Override
    public void read(int off, int n, WireBuffer w) {
      range(off, n).put(w.view(n * elementBytes));
    }

    void copyBuffer(BufferElements src, int off, int n) {
      range(off, n).put(src.range(off, n));
    }

    @Override
    Elements forReader() {
      return new BufferElements(pristine.duplicate().order(ByteOrder.LITTLE_ENDIAN), length, wireCode(), kind, scratch,
          null);
    }

    /** A typed view of the buffer positioned at element {@code off}. */
    private java.nio.Buffer typed(int off) {
      if (typed == null) {
        ByteBuffer b = bytes.duplicate().clear().order(ByteOrder.LITTLE_ENDIAN);
        Class<?> t = kind.elementType();
        typed = t == float.class ? b.asFloatBuffer() : t == double.class ? b.asDoubleBuffer()
            : t == int.class ? b.asIntBuffer() : b.asLongBuffer();
      }
      return typed.clear().position(off);
    }

    @Override
    void getTo(int off, int n, Object dst, int at) {
      java.nio.Buffer v = typed(off);
      if (v instanceof FloatBuffer) {
        ((FloatBuffer) v).get((float[]) dst, at, n);
      } else if (v instanceof DoubleBuffer) {
        ((DoubleBuffer) v).get((double[]) dst, at, n);
      } else if (v instanceof IntBuffer) {
        ((IntBuffer) v).get((int[]) dst, at, n);
      } else {
        ((LongBuffer) v).get((long[]) dst, at, n);
      }
    }

    @Override
    void putFrom(int off, int n, Object src, int at) {
      java.nio.Buffer v = typed(off);
      if (v instanceof FloatBuffer) {
        ((FloatBuffer) v).put((float[]) src, at, n);
      } else if (v instanceof DoubleBuffer) {
        ((DoubleBuffer) v).put((double[]) src, at, n);
      } else if (v instanceof IntBuffer) {
        ((IntBuffer) v).put((int[]) src, at, n);
      } else {
        ((LongBuffer) v).put((long[]) src, at, n);
      }
    }

    @Override
    Object staging(Scratch s, int slot, int n) {
      return kind.staging(s, slot, n);
    }

    @Override
    void reduceArrays(Object d, Object s, int from, int n, ReduceOp op) {
      kind.reduceArrays(d, s, from, n, op);
    }

    @Override
    void getWire(WireBuffer w, Object dst, int off, int n) {
      kind.getWire(w, dst, off, n);
    }

    @Override
    public void divide(int off, int n, int divisor) {
      if (address != 0 && holds(off, n)) {
        OffHeapKernels.divide(kind.elementType(), address + (long) off * elementBytes, n, divisor);
        Reference.reachabilityFence(pristine);
        return;
      }
      int chunk = Math.min(n, CHUNK);
      Object a = staging(scratch, 0, chunk);
      for (int done = 0; done < n; done += chunk) {
        int m = Math.min(chunk, n - done);
        getTo(off + done, m, a, 0);
        kind.divideArray(a, 0, m, divisor);
        putFrom(off + done, m, a, 0);
      }
    }
  }

  static final class ByteElements extends Elements {
    final byte[] array;

    ByteElements(byte[] array, int base, int length) {
      super(base, length, DType.BYTES_WIRE_CODE, null);
      this.array = array;
    }

    @Override
    public int wireElementBytes() {
      return 1;
    }

    @Override
    public void write(int off, int n, WireBuffer w) {
      ByteBuffer b = w.bytes();
      b.clear().position(w.start());
      b.put(array, base + off, n);
      w.size(n);
    }

    @Override
    public void read(int off, int n, WireBuffer w) {
      ByteBuffer b = w.bytes();
      b.clear().position(w.start());
      b.get(array, base + off, n);
    }

    @Override
    public void reduce(int off, int n, WireBuffer w, ReduceOp op, Scratch scratch) {
      throw new UnsupportedOperationException("raw bytes are not reducible");
    }

    @Override
    public void divide(int off, int n, int divisor) {
      throw new UnsupportedOperationException("raw bytes are not reducible");
    }
  }
}
