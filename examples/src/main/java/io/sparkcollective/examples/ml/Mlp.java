package io.sparkcollective.examples.ml;

import java.util.SplittableRandom;

/**
 * A multi-layer perceptron with one tanh hidden layer and a softmax output, its parameters in one flat
 * vector: {@code W1 (hidden x features), b1 (hidden), W2 (classes x hidden), b2 (classes)}.
 */
public final class Mlp implements Model {
  private static final long serialVersionUID = 1L;

  private final int features;
  private final int hidden;
  private final int classes;

  public Mlp(int features, int hidden, int classes) {
    if (features < 1 || hidden < 1 || classes < 2) {
      throw new IllegalArgumentException("an MLP needs features >= 1, hidden >= 1 and classes >= 2, got " + features
          + ", " + hidden + " and " + classes);
    }
    this.features = features;
    this.hidden = hidden;
    this.classes = classes;
  }

  private int b1() {
    return hidden * features;
  }

  private int w2() {
    return b1() + hidden;
  }

  private int b2() {
    return w2() + classes * hidden;
  }

  @Override
  public int parameters() {
    return b2() + classes;
  }

  @Override
  public double[] initialParameters(long seed) {
    // Glorot-style scaling; deterministic so every rank starts from the same point.
    double[] w = new double[parameters()];
    SplittableRandom rnd = new SplittableRandom(seed);
    double s1 = Math.sqrt(1.0 / features);
    for (int i = 0; i < b1(); i++) {
      w[i] = rnd.nextGaussian() * s1;
    }
    double s2 = Math.sqrt(1.0 / hidden);
    for (int i = w2(); i < b2(); i++) {
      w[i] = rnd.nextGaussian() * s2;
    }
    return w;
  }

  @Override
  public boolean regularized(int i) {
    return i < b1() || (i >= w2() && i < b2());
  }

  @Override
  public String describe() {
    return "MLP (" + features + " -> " + hidden + " tanh -> " + classes + " softmax, " + parameters() + " parameters)";
  }

  @Override
  public double[] lossAndGradient(Shard s, double[] w, double[] grad) {
    double[] h = new double[hidden];
    double[] p = new double[classes];
    double[] dh = new double[hidden];
    double loss = 0;
    double correct = 0;
    int b1 = b1();
    int w2 = w2();
    int b2 = b2();
    for (int i = 0; i < s.rows; i++) {
      int off = i * features;
      for (int u = 0; u < hidden; u++) {
        double z = w[b1 + u];
        int base = u * features;
        for (int j = 0; j < features; j++) {
          z += w[base + j] * s.x[off + j];
        }
        h[u] = Math.tanh(z);
      }
      int argmax = 0;
      for (int k = 0; k < classes; k++) {
        double z = w[b2 + k];
        int base = w2 + k * hidden;
        for (int u = 0; u < hidden; u++) {
          z += w[base + u] * h[u];
        }
        p[k] = z;
        if (z > p[argmax]) {
          argmax = k;
        }
      }
      if (argmax == s.y[i]) {
        correct++;
      }
      SoftmaxRegression.softmaxInPlace(p);
      loss -= Math.log(Math.max(p[s.y[i]], 1e-300));
      java.util.Arrays.fill(dh, 0);
      for (int k = 0; k < classes; k++) {
        double err = p[k] - (k == s.y[i] ? 1 : 0);
        int base = w2 + k * hidden;
        for (int u = 0; u < hidden; u++) {
          grad[base + u] += err * h[u];
          dh[u] += err * w[base + u];
        }
        grad[b2 + k] += err;
      }
      for (int u = 0; u < hidden; u++) {
        double dz = dh[u] * (1 - h[u] * h[u]);
        int base = u * features;
        for (int j = 0; j < features; j++) {
          grad[base + j] += dz * s.x[off + j];
        }
        grad[b1 + u] += dz;
      }
    }
    return new double[] {loss, correct};
  }
}
