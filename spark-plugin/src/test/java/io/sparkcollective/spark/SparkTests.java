package io.sparkcollective.spark;

import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/** What the Spark tests share: a local-cluster configuration with the plugin, partitions, the MLlib-style sum. */
public final class SparkTests {
  private SparkTests() {}

  /** Scala line of the Spark on the classpath; executors of a local-cluster need it in their environment. */
  static final String SCALA_BINARY =
      scala.util.Properties.versionNumberString().startsWith("2.13") ? "2.13" : "2.12";

  /** {@code master} (a local-cluster) with the plugin loaded and no UI. */
  static SparkConf withPlugin(String master, String appName) {
    return new SparkConf().setMaster(master).setAppName(appName)
        .set("spark.plugins", CollectivePlugin.class.getName())
        .set("spark.executorEnv.SPARK_SCALA_VERSION", SCALA_BINARY)
        .set("spark.ui.enabled", "false");
  }

  /** An RDD whose partition i holds just the number i. */
  /** Waits up to two minutes until {@code executors} executors have registered with {@code sc}. */
  static void awaitExecutors(JavaSparkContext sc, int executors) throws InterruptedException {
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (sc.sc().getExecutorMemoryStatus().size() - 1 < executors && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
  }

  public static JavaRDD<Integer> partitions(JavaSparkContext sc, int n) {
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(i);
    }
    return sc.parallelize(ids, n);
  }

  /** A partition's gradient of a given length. */
  public interface Gradient extends Serializable {
    float[] of(int partition, int length);
  }

  /**
   * A seeded gradient: multiples of 1/4 in [-25, 25], so sums over a few partitions are exact in any order
   * (results can be compared bit for bit whatever the algorithm or placement).
   */
  public static float[] seededGradient(long seed, int partition, int length) {
    SplittableRandom rnd = new SplittableRandom(seed + partition);
    float[] g = new float[length];
    for (int i = 0; i < length; i++) {
      g[i] = rnd.nextInt(-100, 101) / 4f;
    }
    return g;
  }

  /** The sum of the seeded gradients of partitions 0 to {@code partitions - 1}, on the driver, in order. */
  public static float[] seededSum(long seed, int partitions, int length) {
    float[] sum = new float[length];
    for (int p = 0; p < partitions; p++) {
      float[] g = seededGradient(seed, p, length);
      for (int i = 0; i < length; i++) {
        sum[i] += g[i];
      }
    }
    return sum;
  }

  /** The sum of every partition's gradient by {@code treeAggregate}: how Spark users sync gradients today. */
  public static float[] treeAggregateSum(JavaRDD<Integer> parts, Gradient gradient, int length) {
    return parts.treeAggregate(new float[length], (acc, p) -> {
      float[] g = gradient.of(p, length);
      for (int i = 0; i < length; i++) {
        acc[i] += g[i];
      }
      return acc;
    }, (a, b) -> {
      for (int i = 0; i < length; i++) {
        a[i] += b[i];
      }
      return a;
    }, 2);
  }

  /**
   * Writes {@code text} to {@code dir/name} atomically (a temporary file moved into place), so that a test
   * polling the directory from another JVM never reads a half-written marker.
   */
  public static void writeMarker(String dir, String name, String text) throws IOException {
    Path tmp = Paths.get(dir, name + ".tmp");
    Files.writeString(tmp, text);
    Files.move(tmp, Paths.get(dir, name), StandardCopyOption.ATOMIC_MOVE);
  }
}
