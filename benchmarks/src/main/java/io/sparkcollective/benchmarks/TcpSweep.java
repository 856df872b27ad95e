package io.sparkcollective.benchmarks;

import io.sparkcollective.core.launch.LocalLauncher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Multi-process TCP all-reduce sweep on loopback: starts {@code --ranks} JVMs ({@link TcpSweepWorker}),
 * one per rank, and prints rank 0's table. {@code --jvm "<options>"} adds JVM options to every worker (for
 * example a flight recording). Other options are passed to the workers
 * ({@code --sizes b1,b2,.. --reps 7 --target 0.25 --algorithm AUTO --csv path --ranks-per-process 1}; with
 * {@code --ranks-per-process k} the {@code --ranks} processes run k ranks each).
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar io.sparkcollective.benchmarks.TcpSweep --ranks 4}.
 */
public final class TcpSweep {
  private TcpSweep() {}

  public static void main(String[] argv) throws Exception {
    List<String> pass = new ArrayList<>();
    int ranks = 2;
    List<String> jvm = new ArrayList<>(List.of("-Xms1g", "-Xmx3g", "-XX:+UseParallelGC"));
    for (int i = 0; i + 1 < argv.length; i += 2) {
      if (argv[i].equals("--ranks")) {
        ranks = Integer.parseInt(argv[i + 1]);
      } else if (argv[i].equals("--jvm")) {
        jvm.addAll(List.of(argv[i + 1].trim().split("\\s+")));
      } else {
        pass.add(argv[i]);
        pass.add(argv[i + 1]);
      }
    }
    Path logs = Files.createTempDirectory("collective-sweep");
    try (LocalLauncher launcher = LocalLauncher.start(ranks, TcpSweepWorker.class.getName(), pass, jvm, logs,
        UUID.randomUUID().toString())) {
      int[] codes = launcher.await(60, TimeUnit.MINUTES);
      System.out.print(Files.readString(launcher.log(0)));
      for (int r = 0; r < ranks; r++) {
        if (codes[r] != 0) {
          System.err.println("rank " + r + " exited with " + codes[r] + "; its log:");
          System.err.print(Files.readString(launcher.log(r)));
          System.exit(1);
        }
      }
    }
  }
}
