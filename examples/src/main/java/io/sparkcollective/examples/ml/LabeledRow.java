package io.sparkcollective.examples.ml;

import java.io.Serializable;

/** A training row: class label 0..K-1 and dense features. */
public final class LabeledRow implements Serializable {
  private static final long serialVersionUID = 1L;

  public final int label;
  public final float[] x;

  public LabeledRow(int label, float[] x) {
    this.label = label;
    this.x = x;
  }
}
