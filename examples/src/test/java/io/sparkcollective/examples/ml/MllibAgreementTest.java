package io.sparkcollective.examples.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.classification.LogisticRegressionModel;
import org.apache.spark.ml.linalg.Matrix;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The softmax regression trained in barrier stages with all-reduced gradients (real executor JVMs) reaches
 * the model Spark MLlib's {@code LogisticRegression} fits on the same data and objective. Tolerance: every
 * coefficient and intercept within 1e-5 of MLlib's (measured 1.7e-8; coefficients are ~0.1-1), objectives within
 * 1e-9, and the same predicted class on every row.
 */
@Timeout(300)
class MllibAgreementTest {
  private static final String SCALA_BINARY =
      scala.util.Properties.versionNumberString().startsWith("2.13") ? "2.13" : "2.12";
  private static final double LAMBDA = 0.01;
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() {
    sc = new JavaSparkContext(new SparkConf().setMaster("local-cluster[2,2,1024]").setAppName("mllib-agreement")
        .set("spark.plugins", "io.sparkcollective.spark.CollectivePlugin")
        .set("spark.executorEnv.SPARK_SCALA_VERSION", SCALA_BINARY)
        .set("spark.ui.enabled", "false")
        .set("spark.locality.wait", "0"));
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  @Test
  void shouldReachTheModelOfMllibLogisticRegression() {
    int features = 10;
    int classes = 3;
    Teacher teacher = new Teacher(features, classes, 11);
    JavaRDD<Shard> shards = Data.synthetic(sc, teacher, 4000, 4, 11);
    SoftmaxRegression model = new SoftmaxRegression(features, classes);
    Trainer.Result ours = new Trainer(shards, model, new Optimizer(0.5, 0.8, LAMBDA), 1)
        .train(Trainer.Sync.ALL_REDUCE, 600, 600, it -> { });

    List<Row> rows = new ArrayList<>();
    for (Shard s : shards.collect()) {
      for (int i = 0; i < s.rows; i++) {
        double[] x = new double[features];
        for (int j = 0; j < features; j++) {
          x[j] = s.x[i * features + j];
        }
        rows.add(RowFactory.create((double) s.y[i], Vectors.dense(x)));
      }
    }
    SparkSession spark = SparkSession.builder().sparkContext(sc.sc()).getOrCreate();
    StructType schema = new StructType(new StructField[] {
        DataTypes.createStructField("label", DataTypes.DoubleType, false),
        DataTypes.createStructField("features", SQLDataTypes.VectorType(), false)});
    Dataset<Row> df = spark.createDataFrame(rows, schema);
    LogisticRegressionModel mllib = new LogisticRegression().setFamily("multinomial").setRegParam(LAMBDA)
        .setElasticNetParam(0).setStandardization(false).setFitIntercept(true).setMaxIter(1000).setTol(1e-12)
        .fit(df);

    Matrix coef = mllib.coefficientMatrix();
    double maxDiff = 0;
    for (int k = 0; k < classes; k++) {
      for (int j = 0; j < features; j++) {
        maxDiff = Math.max(maxDiff, Math.abs(coef.apply(k, j) - ours.w[k * features + j]));
      }
      maxDiff = Math.max(maxDiff, Math.abs(mllib.interceptVector().apply(k) - ours.w[classes * features + k]));
    }
    assertTrue(maxDiff < 1e-5, "largest difference from MLlib's parameters: " + maxDiff);

    double[] history = mllib.summary().objectiveHistory();
    double objective = ours.history.get(ours.history.size() - 1).objective;
    assertEquals(history[history.length - 1], objective, 1e-9, "final objective");

    double[] p = new double[classes];
    int disagree = 0;
    for (Row r : rows) {
      double[] x = ((org.apache.spark.ml.linalg.Vector) r.get(1)).toArray();
      float[] xf = new float[features];
      for (int j = 0; j < features; j++) {
        xf[j] = (float) x[j];
      }
      SoftmaxRegression.logits(ours.w, features, classes, xf, 0, p);
      int argmax = 0;
      for (int k = 1; k < classes; k++) {
        argmax = p[k] > p[argmax] ? k : argmax;
      }
      if (argmax != (int) mllib.predict((org.apache.spark.ml.linalg.Vector) r.get(1))) {
        disagree++;
      }
    }
    assertEquals(0, disagree, "rows whose predicted class differs from MLlib's");
    System.out.printf("agreement with MLlib: max parameter difference %.2e, objectives %.12f vs %.12f%n", maxDiff,
        objective, history[history.length - 1]);
  }
}
