package io.sparkcollective.examples;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.engine.LocalGroup;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Data-parallel logistic regression with ranks as threads of one JVM: each rank holds a shard of a
 * synthetic data set with a known true weight vector, computes its gradient, and the gradients are summed
 * with {@code allReduce(..., AVG)} so every rank takes the same step. The same loop runs in Spark barrier
 * tasks with the plugin; here it needs nothing but the core library.
 *
 * <p>Arguments: {@code [ranks=4] [features=1000] [samplesPerRank=5000] [iterations=30]}.
 */
public final class LocalDataParallelTraining {
  private LocalDataParallelTraining() {}

  public static void main(String[] args) throws Exception {
    int ranks = args.length > 0 ? Integer.parseInt(args[0]) : 4;
    int features = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
    int samples = args.length > 2 ? Integer.parseInt(args[2]) : 5000;
    int iterations = args.length > 3 ? Integer.parseInt(args[3]) : 30;
    System.out.printf(Locale.ROOT, "training logistic regression: %d ranks x %d samples, %d features, %d iterations%n",
        ranks, samples, features, iterations);

    float[] truth = new float[features];
    SplittableRandom rnd = new SplittableRandom(1);
    for (int j = 0; j < features; j++) {
      truth[j] = (float) rnd.nextGaussian();
    }
    LocalGroup group = LocalGroup.create(ranks);
    List<float[]> finalWeights;
    try {
      finalWeights = group.run(comm -> train(comm, truth, samples, iterations));
    } finally {
      group.close();
    }
    double cos = cosine(finalWeights.get(0), truth);
    System.out.printf(Locale.ROOT, "done: cosine(learned, true weights) = %.4f; all ranks identical: %b%n", cos,
        identical(finalWeights));
  }

  private static float[] train(Communicator comm, float[] truth, int samples, int iterations) {
    int features = truth.length;
    SplittableRandom rnd = new SplittableRandom(100 + comm.rank());
    float[][] x = new float[samples][features];
    float[] y = new float[samples];
    for (int i = 0; i < samples; i++) {
      double dot = 0;
      for (int j = 0; j < features; j++) {
        x[i][j] = (float) rnd.nextGaussian() / (float) Math.sqrt(features);
        dot += x[i][j] * truth[j];
      }
      y[i] = rnd.nextDouble() < 1 / (1 + Math.exp(-4 * dot)) ? 1 : 0;
    }
    float[] w = new float[features];
    float[] grad = new float[features];
    double[] loss = new double[1];
    // Inputs have variance 1/features, so the loss curvature is about 0.25/features: step ~ features.
    float lr = features;
    for (int it = 1; it <= iterations; it++) {
      java.util.Arrays.fill(grad, 0);
      loss[0] = 0;
      for (int i = 0; i < samples; i++) {
        double dot = 0;
        for (int j = 0; j < features; j++) {
          dot += x[i][j] * w[j];
        }
        double p = 1 / (1 + Math.exp(-dot));
        loss[0] -= y[i] == 1 ? Math.log(p + 1e-12) : Math.log(1 - p + 1e-12);
        float err = (float) (p - y[i]) / samples;
        for (int j = 0; j < features; j++) {
          grad[j] += err * x[i][j];
        }
      }
      long t0 = System.nanoTime();
      comm.allReduce(grad, ReduceOp.AVG);
      long syncMicros = (System.nanoTime() - t0) / 1000;
      loss[0] /= samples;
      comm.allReduce(loss, ReduceOp.AVG);
      for (int j = 0; j < features; j++) {
        w[j] -= lr * grad[j];
      }
      if (comm.rank() == 0 && (it == 1 || it % 5 == 0 || it == iterations)) {
        System.out.printf(Locale.ROOT,
            "iteration %3d  loss %.5f  gradient sync %6d us (all-reduce, incl. waiting for the slowest rank)%n",
            it, loss[0],
            syncMicros);
      }
    }
    return w;
  }

  private static double cosine(float[] a, float[] b) {
    double ab = 0;
    double aa = 0;
    double bb = 0;
    for (int i = 0; i < a.length; i++) {
      ab += a[i] * b[i];
      aa += a[i] * a[i];
      bb += b[i] * b[i];
    }
    return ab / Math.sqrt(aa * bb);
  }

  private static boolean identical(List<float[]> weights) {
    for (float[] w : weights) {
      if (!java.util.Arrays.equals(w, weights.get(0))) {
        return false;
      }
    }
    return true;
  }
}
