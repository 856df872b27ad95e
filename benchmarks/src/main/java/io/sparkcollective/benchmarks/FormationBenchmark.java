package io.sparkcollective.benchmarks;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.examples.TrainingJob;
import io.sparkcollective.spark.Barrier;
import io.sparkcollective.spark.Collective;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * What forming a barrier stage's group at task start (group.formAtTaskStart) gives and costs, against forming
 * it at the first call, in one run: the application is started with the setting on, off, off, on (the same
 * machine for both; symmetric, since the driver's first application runs with a colder JIT), and each time
 * measures (1) empty barrier stages, whose tasks never call (driver wall time per stage), and (2) stages whose
 * tasks work for {@code --work-ms} (loading a partition) and then make two all-reduces of {@code --floats}
 * floats: the first call's time (set-up included when it is not done yet) and the second's, slowest rank; and
 * both for the rank that arrives last (the shortest call of the stage), whose first call waits for nobody and so
 * shows what is left of the set-up without the tasks' start skew. Medians over {@code --stages} stages.
 */
public final class FormationBenchmark {
  private FormationBenchmark() {}

  public static void main(String[] argv) throws Exception {
    Args args = new Args(argv);
    int tasks = args.getInt("tasks", 4);
    int stages = args.getInt("stages", 20);
    int floats = args.getInt("floats", 1000);
    long workMs = args.getInt("work-ms", 200);
    String master = args.get("master", "local-cluster[2,2,1024]");
    List<String> rows = new ArrayList<>();
    double[][] sums = new double[2][5];
    int[] runs = new int[2];
    for (int round = 0; round < 4; round++) {
      boolean eager = round == 0 || round == 3;
      SparkConf conf = new SparkConf().setAppName("spark-collective formation benchmark").setMaster(master)
          .set("spark.plugins", "io.sparkcollective.spark.CollectivePlugin").set("spark.ui.enabled", "false")
          .set(CollectiveConfig.SPARK_PREFIX + CollectiveConfig.FORM_AT_TASK_START, Boolean.toString(eager));
      JavaSparkContext sc = new JavaSparkContext(conf);
      try {
        TrainingJob.awaitExecutors(sc, TrainingJob.expectedExecutors(master, conf), 60_000);
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
          ids.add(i);
        }
        JavaRDD<Integer> parts = sc.parallelize(ids, tasks);
        double[] empty = new double[stages];
        double[] first = new double[stages];
        double[] second = new double[stages];
        double[] firstLast = new double[stages];
        double[] secondLast = new double[stages];
        for (int s = -2; s < stages; s++) { // two stages of each kind warm up
          long t0 = System.nanoTime();
          Barrier.mapPartitionsWithoutRetry(parts, it -> Collections.singletonList(1).iterator()).count();
          long t1 = System.nanoTime();
          List<long[]> calls = Barrier.mapPartitionsWithoutRetry(parts, it -> {
            Thread.sleep(workMs);
            long c0 = System.nanoTime();
            Communicator comm = Collective.communicator();
            float[] g = new float[floats];
            comm.allReduce(g, ReduceOp.SUM);
            long c1 = System.nanoTime();
            comm.allReduce(g, ReduceOp.SUM);
            long c2 = System.nanoTime();
            return Collections.singletonList(new long[] {c1 - c0, c2 - c1}).iterator();
          }).collect();
          if (s >= 0) {
            empty[s] = (t1 - t0) / 1e6;
            first[s] = calls.stream().mapToLong(c -> c[0]).max().getAsLong() / 1e6;
            second[s] = calls.stream().mapToLong(c -> c[1]).max().getAsLong() / 1e6;
            firstLast[s] = calls.stream().mapToLong(c -> c[0]).min().getAsLong() / 1e6;
            secondLast[s] = calls.stream().mapToLong(c -> c[1]).min().getAsLong() / 1e6;
          }
        }
        double[] m = {median(empty), median(first), median(second), median(firstLast), median(secondLast)};
        int k = eager ? 0 : 1;
        for (int i = 0; i < m.length; i++) {
          sums[k][i] += m[i];
        }
        runs[k]++;
        rows.add(String.format(Locale.ROOT, "| %s | %.1f | %.3f | %.3f | %.3f | %.3f |",
            eager ? "at task start" : "at first call", m[0], m[1], m[2], m[3], m[4]));
      } finally {
        sc.stop();
      }
    }
    System.out.printf(Locale.ROOT, "%d barrier tasks on %s, %d stages per kind, first call after %d ms of work, "
        + "%d floats; medians per run (slowest rank for the calls)%n%n", tasks, master, stages, workMs, floats);
    System.out.println("| group formed | empty barrier stage (ms) | first all-reduce (ms) | second all-reduce (ms) "
        + "| first, last rank in (ms) | second, last rank in (ms) |");
    System.out.println("|---|---:|---:|---:|---:|---:|");
    rows.forEach(System.out::println);
    System.out.printf(Locale.ROOT, "%nmean of runs: empty stage %.1f ms at task start vs %.1f ms at first call "
        + "(%.2fx); first call %.3f vs %.3f ms; second call %.3f vs %.3f ms; last rank in: first call %.3f vs "
        + "%.3f ms, second %.3f vs %.3f ms%n", sums[0][0] / runs[0],
        sums[1][0] / runs[1], (sums[0][0] / runs[0]) / (sums[1][0] / runs[1]), sums[0][1] / runs[0],
        sums[1][1] / runs[1], sums[0][2] / runs[0], sums[1][2] / runs[1], sums[0][3] / runs[0], sums[1][3] / runs[1],
        sums[0][4] / runs[0], sums[1][4] / runs[1]);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
