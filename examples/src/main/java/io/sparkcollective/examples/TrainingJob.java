package io.sparkcollective.examples;

import io.sparkcollective.examples.ml.Data;
import io.sparkcollective.examples.ml.LibSvm;
import io.sparkcollective.examples.ml.Mlp;
import io.sparkcollective.examples.ml.Model;
import io.sparkcollective.examples.ml.Optimizer;
import io.sparkcollective.examples.ml.Shard;
import io.sparkcollective.examples.ml.SoftmaxRegression;
import io.sparkcollective.examples.ml.Teacher;
import io.sparkcollective.examples.ml.Trainer;
import io.sparkcollective.examples.ml.Trainer.Iteration;
import io.sparkcollective.examples.ml.Trainer.Sync;
import io.sparkcollective.examples.report.LineChart;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The main job: data-parallel training in barrier stages whose gradients are summed with {@code allReduce},
 * then the same training with MLlib's way of syncing ({@code treeAggregate} + broadcast), and optionally
 * with {@code BarrierTaskContext.allGather}. Prints progress, a summary, and writes PNG charts.
 *
 * <p>Run {@code --help} for the options. Without a master (neither {@code --master} nor spark-submit's),
 * it starts an embedded {@code local-cluster} with real executor JVMs.
 */
public final class TrainingJob {
  private TrainingJob() {}

  static final String USAGE = String.join("\n",
      "options (defaults in brackets):",
      "  --master URL          Spark master [spark-submit's, else local-cluster[E,C,1024]]",
      "  --executors E         executors of the embedded local-cluster / spark.executor.instances [2]",
      "  --cores C             cores per executor [2]",
      "  --partitions P        barrier tasks (ranks); at most E x C [E x C]",
      "  --model NAME          logistic | mlp [logistic]",
      "  --hidden H            hidden units of the MLP [64]",
      "  --rows N              synthetic rows in all [20000]",
      "  --features D          synthetic features [64]",
      "  --classes K           synthetic classes [8]",
      "  --libsvm PATH         train on a LIBSVM file instead of synthetic data",
      "  --iterations T        gradient steps [60]",
      "  --per-stage S         steps per barrier stage (allReduce, allGather) [20]",
      "  --lr RATE             learning rate [0.5]",
      "  --momentum M          Nesterov momentum [0.8]",
      "  --reg LAMBDA          L2 regularization [0.0001]",
      "  --baseline MODE       treeAggregate | none: the run to compare with [treeAggregate]",
      "  --compare             also sync by BarrierTaskContext.allGather (about 1 s per step) for a few steps",
      "  --gather-iterations G steps of the allGather run [3]",
      "  --seed S              data and initialisation seed [7]",
      "  --out DIR             charts and summary [target/training]");

  /** Parsed options. */
  static final class Options {
    final Map<String, String> values = new LinkedHashMap<>();

    static Options parse(String[] args) {
      Options o = new Options();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (a.equals("--help") || a.equals("-h")) {
          o.values.put("help", "true");
        } else if (a.equals("--compare")) {
          o.values.put("compare", "true");
        } else if (a.startsWith("--") && i + 1 < args.length) {
          o.values.put(a.substring(2), args[++i]);
        } else {
          throw new IllegalArgumentException("unknown or incomplete option '" + a + "'\n" + USAGE);
        }
      }
      return o;
    }

    String get(String key, String dflt) {
      return values.getOrDefault(key, dflt);
    }

    int integer(String key, int dflt) {
      String v = values.get(key);
      try {
        int n = v == null ? dflt : Integer.parseInt(v);
        if (n < 0) {
          throw new NumberFormatException("negative");
        }
        return n;
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("--" + key + " needs a non-negative integer, got '" + v + "'");
      }
    }

    double real(String key, double dflt) {
      String v = values.get(key);
      try {
        return v == null ? dflt : Double.parseDouble(v);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("--" + key + " needs a number, got '" + v + "'");
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Options o = Options.parse(args);
    if (o.values.containsKey("help")) {
      System.out.println(USAGE);
      return;
    }
    int executors = o.integer("executors", 2);
    int cores = o.integer("cores", 2);
    SparkConf conf = new SparkConf().setAppName("spark-collective training")
        .set("spark.plugins", "io.sparkcollective.spark.CollectivePlugin")
        .set("spark.ui.enabled", conf("spark.ui.enabled", "false"))
        // Barrier tasks start together; waiting for a cached partition's executor only delays them.
        .set("spark.locality.wait", conf("spark.locality.wait", "0"))
        .set("spark.executor.instances", conf("spark.executor.instances", Integer.toString(executors)))
        .set("spark.executor.cores", conf("spark.executor.cores", Integer.toString(cores)));
    boolean embedded = !o.values.containsKey("master") && !new SparkConf().contains("spark.master");
    String master = o.get("master", embedded ? "local-cluster[" + executors + "," + cores + ",1024]" : null);
    if (master != null) {
      conf.setMaster(master);
    }
    JavaSparkContext sc = start(conf, embedded);
    try {
      run(sc, o);
    } finally {
      sc.stop();
    }
  }

  private static String conf(String key, String dflt) {
    return System.getProperty(key, dflt);
  }

  /**
   * Starts Spark and waits (up to 60 s) for the executors it asked for, since a barrier stage needs all its
   * task slots at once. If the embedded local-cluster's executors cannot start (Spark needs a SPARK_HOME with a
   * jars folder: run through examples/spark-submit.sh), says so and falls back to local mode.
   */
  static JavaSparkContext start(SparkConf conf, boolean embedded) throws Exception {
    JavaSparkContext sc = new JavaSparkContext(conf);
    int expected = expectedExecutors(sc.master(), conf);
    int registered = awaitExecutors(sc, expected, 60_000);
    if (registered >= expected) {
      System.out.printf(Locale.ROOT, "Spark %s, master %s: %d executor JVM(s) ready%n", sc.version(), sc.master(),
          registered);
      return sc;
    }
    if (!embedded) {
      System.out.printf(Locale.ROOT, "WARNING: %d of %d executors registered after 60 s; going on with them%n",
          registered, expected);
      return sc;
    }
    sc.stop();
    int cores = Integer.parseInt(conf.get("spark.executor.instances")) * Integer.parseInt(
        conf.get("spark.executor.cores"));
    String local = "local[" + cores + "]";
    System.out.println("WARNING: the local-cluster executors did not start within 60 s (Spark needs SPARK_HOME with "
        + "a jars folder: run through examples/spark-submit.sh); falling back to " + local
        + " (ranks as threads of this JVM)");
    return new JavaSparkContext(conf.setMaster(local));
  }

  /**
   * Waits until {@code expected} executors have registered or {@code timeoutMs} passed; returns how many did.
   * A barrier stage needs all its task slots at once.
   */
  public static int awaitExecutors(JavaSparkContext sc, int expected, long timeoutMs) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    while (true) {
      int registered = sc.sc().getExecutorMemoryStatus().size() - 1;
      if (registered >= expected || System.nanoTime() > deadline) {
        return registered;
      }
      Thread.sleep(100);
    }
  }

  /** Executors to wait for: E of local-cluster[E,C,M], none in local mode, else spark.executor.instances. */
  public static int expectedExecutors(String master, SparkConf conf) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("local-cluster\\[\\s*(\\d+)\\s*,.*").matcher(master);
    if (m.matches()) {
      return Integer.parseInt(m.group(1));
    }
    if (master.startsWith("local")) {
      return 0;
    }
    return conf.getInt("spark.executor.instances", 0);
  }

  static void run(JavaSparkContext sc, Options o) throws IOException {
    long seed = o.integer("seed", 7);
    int slots = Math.max(1, sc.defaultParallelism());
    int partitions = o.integer("partitions", slots);
    if (partitions < 1 || partitions > slots) {
      throw new IllegalArgumentException("--partitions " + partitions + ": a barrier stage needs every task running "
          + "at once, and this cluster has " + slots + " task slots");
    }
    JavaRDD<Shard> shards;
    int features;
    int classes;
    Teacher teacher = null;
    String libsvm = o.values.get("libsvm");
    if (libsvm != null) {
      LibSvm data = LibSvm.read(Paths.get(libsvm));
      features = data.features;
      classes = data.classes;
      shards = Data.of(sc, data.rows, features, partitions);
      System.out.printf(Locale.ROOT, "data: %s, %d rows, %d features, %d classes%n", libsvm, data.rows.size(),
          features, classes);
    } else {
      features = o.integer("features", 64);
      classes = o.integer("classes", 8);
      int rows = o.integer("rows", 20_000);
      teacher = new Teacher(features, classes, seed);
      shards = Data.synthetic(sc, teacher, rows, partitions, seed);
      System.out.printf(Locale.ROOT, "data: synthetic, %d rows from a known softmax model, %d features, %d classes%n",
          rows, features, classes);
    }
    String modelName = o.get("model", "logistic");
    Model model;
    if (modelName.equals("logistic")) {
      model = new SoftmaxRegression(features, classes);
    } else if (modelName.equals("mlp")) {
      model = new Mlp(features, o.integer("hidden", 64), classes);
    } else {
      throw new IllegalArgumentException("--model must be logistic or mlp, got '" + modelName + "'");
    }
    Optimizer optimizer = new Optimizer(o.real("lr", 0.5), o.real("momentum", 0.8), o.real("reg", 1e-4));
    int iterations = Math.max(1, o.integer("iterations", 60));
    int perStage = Math.max(1, o.integer("per-stage", 20));
    System.out.printf(Locale.ROOT, "model: %s; %d barrier tasks; %d iterations, %d per stage%n", model.describe(),
        partitions, iterations, perStage);
    Trainer trainer = new Trainer(shards, model, optimizer, seed);

    Map<String, Trainer.Result> runs = new LinkedHashMap<>();
    System.out.println("\n== gradients summed by allReduce (spark-collective) ==");
    runs.put("allReduce", timed(trainer, Sync.ALL_REDUCE, iterations, perStage));
    if (!o.get("baseline", "treeAggregate").equals("none")) {
      System.out.println("\n== gradients summed by treeAggregate + broadcast (as MLlib does) ==");
      runs.put("treeAggregate", timed(trainer, Sync.TREE_AGGREGATE, iterations, perStage));
    }
    if (o.values.containsKey("compare")) {
      int g = Math.max(1, o.integer("gather-iterations", 3));
      System.out.println("\n== gradients summed by BarrierTaskContext.allGather of Base64 text ==");
      runs.put("allGather", timed(trainer, Sync.ALL_GATHER, g, g));
    }
    Path out = Paths.get(o.get("out", "target/training"));
    report(runs, model, teacher, shards, out);
  }

  private static Trainer.Result timed(Trainer trainer, Sync sync, int iterations, int perStage) {
    int every = Math.max(1, iterations / 12);
    return trainer.train(sync, iterations, perStage, it -> {
      if (it.index == 1 || it.index % every == 0 || it.index == iterations) {
        System.out.printf(Locale.ROOT, "iteration %4d  objective %.5f  accuracy %.3f  time/iteration %8.2f ms"
            + "  of which gradient sync %8.3f ms%n", it.index, it.objective, it.accuracy, it.wallNanos / 1e6,
            it.syncNanos / 1e6);
      }
    });
  }

  /** Median of the per-iteration values after the first stage (warm-up). */
  static double median(List<Iteration> history, boolean sync, int skip) {
    List<Double> v = new ArrayList<>();
    for (int i = Math.min(skip, history.size() - 1); i < history.size(); i++) {
      v.add((sync ? history.get(i).syncNanos : history.get(i).wallNanos) / 1e6);
    }
    v.sort(null);
    return v.get(v.size() / 2);
  }

  private static void report(Map<String, Trainer.Result> runs, Model model, Teacher teacher, JavaRDD<Shard> shards,
      Path out) throws IOException {
    Files.createDirectories(out);
    StringBuilder md = new StringBuilder();
    md.append("| gradient sync | iterations | time/iteration (median, ms) | sync/iteration (median, ms) "
        + "| final objective | final accuracy |\n|---|---:|---:|---:|---:|---:|\n");
    LineChart loss = new LineChart("Training objective per iteration", "iteration", "objective");
    LineChart time = new LineChart("Time per iteration (wall, seen from the driver)", "iteration", "ms").logY();
    double ours = Double.NaN;
    for (Map.Entry<String, Trainer.Result> e : runs.entrySet()) {
      List<Iteration> h = e.getValue().history;
      // The first 20 iterations include connection set-up, JIT warm-up and the first broadcast: skipped.
      int skip = h.size() > 20 ? 20 : 0;
      double perIteration = median(h, false, skip);
      if (e.getKey().equals("allReduce")) {
        ours = perIteration;
      }
      Iteration last = h.get(h.size() - 1);
      md.append(String.format(Locale.ROOT, "| %s | %d | %.2f | %.3f | %.6f | %.4f |%n", e.getKey(), h.size(),
          perIteration, median(h, true, skip), last.objective, last.accuracy));
      double[] x = new double[h.size()];
      double[] obj = new double[h.size()];
      double[] ms = new double[h.size()];
      for (int i = 0; i < h.size(); i++) {
        x[i] = h.get(i).index;
        obj[i] = h.get(i).objective;
        ms[i] = h.get(i).wallNanos / 1e6;
      }
      loss.add(e.getKey(), x, obj, !e.getKey().equals("allReduce"));
      time.add(e.getKey(), x, ms);
    }
    md.append('\n');
    for (Map.Entry<String, Trainer.Result> e : runs.entrySet()) {
      if (!e.getKey().equals("allReduce")) {
        double theirs = median(e.getValue().history, false, e.getValue().history.size() > 20 ? 20 : 0);
        md.append(String.format(Locale.ROOT, "allReduce takes %.1fx less time per iteration than %s.%n",
            theirs / ours, e.getKey()));
      }
    }
    Trainer.Result a = runs.get("allReduce");
    Trainer.Result b = runs.get("treeAggregate");
    if (b != null) {
      double maxDiff = 0;
      for (int i = 0; i < Math.min(a.history.size(), b.history.size()); i++) {
        maxDiff = Math.max(maxDiff, Math.abs(a.history.get(i).objective - b.history.get(i).objective));
      }
      md.append(String.format(Locale.ROOT, "Same optimizer, same data: the two objective curves differ by at most "
          + "%.2e (summation order).%n", maxDiff));
    }
    if (teacher != null && model instanceof SoftmaxRegression) {
      md.append(String.format(Locale.ROOT, "Cosine between the learned and the true coefficients: %.4f.%n",
          cosine(Arrays.copyOf(a.w, teacher.classes * teacher.features),
              Arrays.copyOf(centered(teacher.weights, teacher), teacher.classes * teacher.features))));
    }
    loss.write(out.resolve("loss.png"));
    time.write(out.resolve("time-per-iteration.png"));
    Files.writeString(out.resolve("summary.md"), md.toString());
    System.out.println("\n== summary ==");
    System.out.print(md);
    System.out.println("charts: " + out.resolve("loss.png") + ", " + out.resolve("time-per-iteration.png"));
  }

  /** The teacher's coefficients with each feature's class mean removed (softmax is shift invariant). */
  private static double[] centered(double[] w, Teacher t) {
    double[] c = w.clone();
    for (int j = 0; j < t.features; j++) {
      double mean = 0;
      for (int k = 0; k < t.classes; k++) {
        mean += w[k * t.features + j];
      }
      mean /= t.classes;
      for (int k = 0; k < t.classes; k++) {
        c[k * t.features + j] -= mean;
      }
    }
    return c;
  }

  private static double cosine(double[] a, double[] b) {
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
}
