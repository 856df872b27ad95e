package io.sparkcollective.benchmarks;

import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.kernel.Bf16Pairs;
import io.sparkcollective.core.kernel.Elements;
import io.sparkcollective.core.kernel.HalfFloats;
import io.sparkcollective.core.kernel.Kernels;
import io.sparkcollective.core.kernel.Scratch;
import io.sparkcollective.core.kernel.WireBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The f32 SUM kernel against its bounds, on the same arrays in the same run: a plain {@code a[i] += b[i]}
 * loop (the speed the kernel must keep at least 80% of) and a copy of the same bytes (faster than any
 * reduction can be). {@code segmentReduceF32} is the path a received segment takes: bulk copy out of the
 * little-endian wire buffer into scratch, then the kernel.
 *
 * <p>A vector in a direct buffer (a Python task's array from {@code comm.empty}, a Java task's direct buffer)
 * against the same in a {@code float[]}: {@code segmentReduceF32Direct} is {@code segmentReduceF32} into it, and
 * {@code foldInPlaceF32} / {@code foldInPlaceF32Direct} fold another rank's vector of the process into this one
 * where it lies, as the hierarchical all-reduce's tasks of one executor do.
 *
 * <p>Half precision, against the same copy: {@code segmentWriteF32} (a segment into a frame, as sent),
 * {@code segmentWriteBf16Wire} and {@code segmentReduceBf16Wire} (the same with bfloat16 on the wire: narrowed
 * on the way out, widened and summed on the way in), {@code stageAndCommitF16} and {@code stageAndCommitBf16}
 * (an F16 or BF16 vector widened to F32 before an all-reduce and narrowed back after it), {@code
 * segmentWriteF16Wire} and {@code segmentReduceF16Wire} (F16 data on its default 16-bit wire), and the
 * conversion kernels alone ({@code narrowToBf16}, {@code widenFromBf16}, {@code narrowToF16}, {@code
 * widenFromF16}: the elements of a float array to 16-bit values or back). With
 * {@code -jvmArgsAppend --add-modules=jdk.incubator.vector} the conversions run on the Vector API.
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar KernelBenchmark}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 4, time = 1)
@Measurement(iterations = 6, time = 1)
@Fork(value = 2)
public class KernelBenchmark {
  /** 16 KiB, 256 KiB (one segment), 4 MiB and 64 MiB of floats. */
  @Param({"4096", "65536", "1048576", "16777216"})
  public int floats;

  private float[] a;
  private float[] b;
  private WireBuffer wire;
  private Elements target;
  private final Scratch scratch = new Scratch();
  private int segment;

  private Elements directTarget;
  private Elements peerVector;
  private Elements directPeerVector;

  private WireBuffer bf16Wire;
  private Elements bf16Target;
  private Elements f32Source;
  private ByteBuffer f16;
  private ByteBuffer bf16;
  private final Scratch f16Scratch = new Scratch();
  private short[] halves;
  private int[] pairs;
  private Elements f16Source;
  private WireBuffer f16Wire;

  @Setup
  public void setUp() {
    a = new float[floats];
    b = new float[floats];
    for (int i = 0; i < floats; i++) {
      a[i] = i % 13;
      b[i] = i % 7;
    }
    segment = Math.min(floats, 65536);
    wire = new WireBuffer(segment * 4, true);
    Elements.open(DataBuffer.of(b, 0, segment), scratch, 0).write(0, segment, wire);
    target = Elements.open(DataBuffer.of(a), scratch, 0);
    peerVector = Elements.open(DataBuffer.of(b), scratch, 0);
    directTarget = Elements.open(DataBuffer.of(direct(a), DType.F32), scratch, 0);
    directPeerVector = Elements.open(DataBuffer.of(direct(b), DType.F32), scratch, 0);
    f32Source = Elements.open(DataBuffer.of(b), scratch, 0);
    bf16Wire = new WireBuffer(segment * 4, true);
    Elements.openReduce(DataBuffer.of(b, 0, segment), DType.BF16, scratch, 0).write(0, segment, bf16Wire);
    bf16Target = Elements.openReduce(DataBuffer.of(a), DType.BF16, scratch, 0);
    f16 = ByteBuffer.allocateDirect(floats * 2).order(ByteOrder.LITTLE_ENDIAN);
    bf16 = ByteBuffer.allocateDirect(floats * 2).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < floats; i++) {
      f16.putShort(2 * i, HalfFloats.floatToF16(b[i]));
      bf16.putShort(2 * i, HalfFloats.floatToBf16(b[i]));
    }
    halves = new short[floats];
    pairs = new int[floats / 2];
    HalfFloats.toF16(b, 0, halves, floats);
    // F16 data on its default 16-bit wire: staged once here (its own working array), then moved by segments.
    f16Source = Elements.openReduce(DataBuffer.of(f16, DType.F16), null, f16Scratch, 0);
    f16Wire = new WireBuffer(segment * 4, true);
    f16Source.write(0, segment, f16Wire);
  }

  private static ByteBuffer direct(float[] values) {
    ByteBuffer d = ByteBuffer.allocateDirect(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    d.asFloatBuffer().put(values);
    return d;
  }

  @Benchmark
  public Elements segmentReduceF32Direct() {
    for (int off = 0; off < floats; off += segment) {
      directTarget.reduce(off, segment, wire, ReduceOp.SUM, scratch);
    }
    return directTarget;
  }

  @Benchmark
  public Elements foldInPlaceF32() {
    target.reduceFrom(peerVector, 0, floats, ReduceOp.SUM, scratch);
    return target;
  }

  @Benchmark
  public Elements foldInPlaceF32Direct() {
    directTarget.reduceFrom(directPeerVector, 0, floats, ReduceOp.SUM, scratch);
    return directTarget;
  }

  @Benchmark
  public WireBuffer segmentWriteF32() {
    for (int off = 0; off < floats; off += segment) {
      f32Source.write(off, segment, wire);
    }
    return wire;
  }

  @Benchmark
  public WireBuffer segmentWriteBf16Wire() {
    Elements source = Elements.openReduce(DataBuffer.of(b), DType.BF16, scratch, 0);
    for (int off = 0; off < floats; off += segment) {
      source.write(off, segment, bf16Wire);
    }
    return bf16Wire;
  }

  @Benchmark
  public Elements segmentReduceBf16Wire() {
    for (int off = 0; off < floats; off += segment) {
      bf16Target.reduce(off, segment, bf16Wire, ReduceOp.SUM, scratch);
    }
    return bf16Target;
  }

  @Benchmark
  public WireBuffer segmentWriteF16Wire() {
    for (int off = 0; off < floats; off += segment) {
      f16Source.write(off, segment, f16Wire);
    }
    return f16Wire;
  }

  @Benchmark
  public Elements segmentReduceF16Wire() {
    for (int off = 0; off < floats; off += segment) {
      f16Source.reduce(off, segment, f16Wire, ReduceOp.SUM, scratch);
    }
    return f16Source;
  }

  @Benchmark
  public Elements stageAndCommitF16() {
    Elements e = Elements.open(DataBuffer.of(f16, DType.F16), scratch, 1);
    e.commit();
    return e;
  }

  @Benchmark
  public Elements stageAndCommitBf16() {
    Elements e = Elements.open(DataBuffer.of(bf16, DType.BF16), scratch, 1);
    e.commit();
    return e;
  }

  @Benchmark
  public float[] plainAddLoop() {
    float[] x = a;
    float[] y = b;
    for (int i = 0; i < x.length; i++) {
      x[i] += y[i];
    }
    return x;
  }

  @Benchmark
  public float[] kernelSumF32() {
    Kernels.reduce(a, b, floats, ReduceOp.SUM);
    return a;
  }

  /** The conversion kernels alone, {@code floats} elements each, against {@link #copySameBytes}. */
  @Benchmark
  public short[] narrowToBf16() {
    HalfFloats.toBf16(b, 0, halves, floats);
    return halves;
  }

  @Benchmark
  public float[] widenFromBf16() {
    HalfFloats.fromBf16At(halves, 0, a, 0, floats);
    return a;
  }

  /** The bfloat16 wire's kernels ({@link Bf16Pairs}: two values per 32-bit word), {@code floats} elements each. */
  @Benchmark
  public int[] narrowToBf16Pairs() {
    Bf16Pairs.narrow(b, 0, floats / 2, pairs);
    return pairs;
  }

  @Benchmark
  public float[] widenFromBf16Pairs() {
    Bf16Pairs.unpack(pairs, (short) 0, 0, floats, 0, floats, a, 0);
    return a;
  }

  @Benchmark
  public short[] narrowToF16() {
    HalfFloats.toF16(b, 0, halves, floats);
    return halves;
  }

  @Benchmark
  public float[] widenFromF16() {
    HalfFloats.fromF16At(halves, 0, a, 0, floats);
    return a;
  }

  @Benchmark
  public float[] copySameBytes() {
    System.arraycopy(b, 0, a, 0, floats);
    return a;
  }

  @Benchmark
  public Elements segmentReduceF32() {
    for (int off = 0; off < floats; off += segment) {
      target.reduce(off, segment, wire, ReduceOp.SUM, scratch);
    }
    return target;
  }
}
