package io.sparkcollective.benchmarks;

import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.kernel.Elements;
import io.sparkcollective.core.kernel.Kernels;
import io.sparkcollective.core.kernel.Scratch;
import io.sparkcollective.core.kernel.WireBuffer;
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
