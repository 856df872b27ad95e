package io.sparkcollective.examples.ml;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/**
 * Reads a LIBSVM text file ({@code label index:value ...}, 1-based ascending indices) into dense rows.
 * Labels are mapped to 0..K-1 in ascending order of their values.
 */
public final class LibSvm {
  public final List<LabeledRow> rows;
  public final int features;
  public final int classes;
  /** The original label value of each class. */
  public final double[] labels;

  private LibSvm(List<LabeledRow> rows, int features, double[] labels) {
    this.rows = rows;
    this.features = features;
    this.classes = labels.length;
    this.labels = labels;
  }

  public static LibSvm read(Path file) throws IOException {
    List<double[]> raw = new ArrayList<>();
    List<int[]> indices = new ArrayList<>();
    List<Double> rawLabels = new ArrayList<>();
    TreeMap<Double, Integer> classes = new TreeMap<>();
    int features = 0;
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String line;
      int lineNo = 0;
      while ((line = in.readLine()) != null) {
        lineNo++;
        line = line.trim();
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        String[] parts = line.split("\\s+");
        try {
          double label = Double.parseDouble(parts[0]);
          int[] idx = new int[parts.length - 1];
          double[] val = new double[parts.length - 1];
          for (int i = 1; i < parts.length; i++) {
            int colon = parts[i].indexOf(':');
            idx[i - 1] = Integer.parseInt(parts[i].substring(0, colon)) - 1;
            val[i - 1] = Double.parseDouble(parts[i].substring(colon + 1));
            if (idx[i - 1] < 0) {
              throw new IllegalArgumentException("index " + (idx[i - 1] + 1) + " is not 1-based");
            }
            features = Math.max(features, idx[i - 1] + 1);
          }
          classes.putIfAbsent(label, 0);
          rawLabels.add(label);
          indices.add(idx);
          raw.add(val);
        } catch (RuntimeException e) {
          throw new IOException(file + " line " + lineNo + " is not LIBSVM (label index:value ...): " + e.getMessage(),
              e);
        }
      }
    }
    if (classes.size() < 2) {
      throw new IOException(file + " has " + classes.size() + " distinct label(s); classification needs two or more");
    }
    double[] labels = new double[classes.size()];
    int k = 0;
    for (Double l : classes.keySet()) {
      classes.put(l, k);
      labels[k++] = l;
    }
    List<LabeledRow> rows = new ArrayList<>(raw.size());
    for (int r = 0; r < raw.size(); r++) {
      float[] x = new float[features];
      int[] idx = indices.get(r);
      double[] val = raw.get(r);
      for (int i = 0; i < idx.length; i++) {
        x[idx[i]] = (float) val[i];
      }
      rows.add(new LabeledRow(classes.get(rawLabels.get(r)), x));
    }
    return new LibSvm(rows, features, labels);
  }
}
