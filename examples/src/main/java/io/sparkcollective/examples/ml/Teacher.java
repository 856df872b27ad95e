package io.sparkcollective.examples.ml;

import java.io.Serializable;
import java.util.SplittableRandom;

/** The known ground truth of the synthetic data: a softmax model with random coefficients. */
public final class Teacher implements Serializable {
  private static final long serialVersionUID = 1L;

  public final int features;
  public final int classes;
  /** Coefficients, class-major ({@code classes x features}), then one intercept per class. */
  public final double[] weights;

  public Teacher(int features, int classes, long seed) {
    this.features = features;
    this.classes = classes;
    this.weights = new double[classes * (features + 1)];
    SplittableRandom rnd = new SplittableRandom(seed);
    // Scaled so the classes overlap but are learnable: logits of standard deviation ~2.
    double scale = 2.0 / Math.sqrt(features);
    for (int i = 0; i < classes * features; i++) {
      weights[i] = rnd.nextGaussian() * scale;
    }
    for (int k = 0; k < classes; k++) {
      weights[classes * features + k] = rnd.nextGaussian() * 0.5;
    }
  }

  /** Class probabilities of the row starting at {@code x[offset]}, into {@code p}. */
  public void probabilities(float[] x, int offset, double[] p) {
    SoftmaxRegression.logits(weights, features, classes, x, offset, p);
    SoftmaxRegression.softmaxInPlace(p);
  }
}
