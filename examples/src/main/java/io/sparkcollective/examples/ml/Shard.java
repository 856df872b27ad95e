package io.sparkcollective.examples.ml;

import java.io.Serializable;
import java.util.Iterator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One partition's training rows packed for fast loops: features row-major in one array, labels 0..K-1.
 * Serializable so Spark can cache it as the single element of its partition.
 */
public final class Shard implements Serializable {
  private static final long serialVersionUID = 1L;

  public final int rows;
  public final int features;
  public final float[] x;
  public final int[] y;

  public Shard(int rows, int features, float[] x, int[] y) {
    if (x.length != rows * features || y.length != rows) {
      throw new IllegalArgumentException("shard of " + rows + " rows x " + features + " features has " + x.length
          + " feature values and " + y.length + " labels");
    }
    this.rows = rows;
    this.features = features;
    this.x = x;
    this.y = y;
  }

  /** Packs labelled rows (dense, all of {@code features} columns). */
  public static Shard of(Iterator<LabeledRow> it, int features) {
    List<LabeledRow> rows = new java.util.ArrayList<>();
    it.forEachRemaining(rows::add);
    float[] x = new float[rows.size() * features];
    int[] y = new int[rows.size()];
    for (int i = 0; i < rows.size(); i++) {
      LabeledRow r = rows.get(i);
      System.arraycopy(r.x, 0, x, i * features, Math.min(features, r.x.length));
      y[i] = r.label;
    }
    return new Shard(rows.size(), features, x, y);
  }

  /**
   * Synthetic rows drawn from a known softmax model ({@link Teacher}): features standard normal, label
   * sampled from the teacher's class probabilities. Deterministic in (seed, partition).
   */
  public static Shard synthetic(Teacher teacher, int rows, long seed, int partition) {
    int d = teacher.features;
    SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + partition);
    float[] x = new float[rows * d];
    int[] y = new int[rows];
    double[] p = new double[teacher.classes];
    for (int i = 0; i < rows; i++) {
      for (int j = 0; j < d; j++) {
        x[i * d + j] = (float) rnd.nextGaussian();
      }
      teacher.probabilities(x, i * d, p);
      double u = rnd.nextDouble();
      int k = 0;
      double acc = p[0];
      while (u > acc && k < teacher.classes - 1) {
        acc += p[++k];
      }
      y[i] = k;
    }
    return new Shard(rows, d, x, y);
  }
}
