package io.sparkcollective.examples.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The models' analytic gradients against central finite differences of their loss; the LIBSVM reader. */
@Timeout(60)
class ModelGradientTest {
  private static void checkGradient(Model model, Shard shard, long seed) {
    double[] w = model.initialParameters(seed);
    SplittableRandom rnd = new SplittableRandom(seed);
    for (int i = 0; i < w.length; i++) {
      w[i] += rnd.nextGaussian() * 0.3;
    }
    double[] grad = new double[w.length];
    model.lossAndGradient(shard, w, grad);
    double h = 1e-5;
    for (int i = 0; i < w.length; i++) {
      double saved = w[i];
      w[i] = saved + h;
      double up = model.lossAndGradient(shard, w, new double[w.length])[0];
      w[i] = saved - h;
      double down = model.lossAndGradient(shard, w, new double[w.length])[0];
      w[i] = saved;
      double numeric = (up - down) / (2 * h);
      assertEquals(numeric, grad[i], 1e-5 * Math.max(1, Math.abs(numeric)), model.describe() + " parameter " + i);
    }
  }

  @Test
  void softmaxRegressionGradientMatchesFiniteDifferences() {
    Teacher t = new Teacher(5, 3, 1);
    checkGradient(new SoftmaxRegression(5, 3), Shard.synthetic(t, 40, 2, 0), 3);
  }

  @Test
  void mlpGradientMatchesFiniteDifferences() {
    Teacher t = new Teacher(4, 3, 1);
    checkGradient(new Mlp(4, 6, 3), Shard.synthetic(t, 30, 2, 1), 4);
  }

  @Test
  void syntheticLabelsFollowTheTeacher() {
    // With a strong teacher the Bayes classifier (the teacher itself) is right far more often than chance.
    Teacher t = new Teacher(8, 4, 5);
    Shard s = Shard.synthetic(t, 4000, 9, 0);
    double[] lossAndCorrect = new SoftmaxRegression(8, 4).lossAndGradient(s, t.weights, new double[t.weights.length]);
    assertTrue(lossAndCorrect[1] / s.rows > 0.5, "teacher accuracy " + lossAndCorrect[1] / s.rows);
  }

  @Test
  void readsLibSvmAndNamesTheBadLine(@TempDir Path dir) throws Exception {
    Path ok = dir.resolve("ok.txt");
    Files.writeString(ok, "# comment\n-1 1:0.5 3:2\n+1 2:1.5\n\n-1 3:-1\n");
    LibSvm data = LibSvm.read(ok);
    assertEquals(3, data.rows.size());
    assertEquals(3, data.features);
    assertEquals(2, data.classes);
    assertEquals(0, data.rows.get(0).label);
    assertEquals(1, data.rows.get(1).label);
    assertEquals(0.5f, data.rows.get(0).x[0]);
    assertEquals(2f, data.rows.get(0).x[2]);
    assertEquals(1.5f, data.rows.get(1).x[1]);
    Path bad = dir.resolve("bad.txt");
    Files.writeString(bad, "1 1:0.5\n2 x:1\n");
    java.io.IOException e = assertThrows(java.io.IOException.class, () -> LibSvm.read(bad));
    assertTrue(e.getMessage().contains("line 2"), e.getMessage());
  }
}
