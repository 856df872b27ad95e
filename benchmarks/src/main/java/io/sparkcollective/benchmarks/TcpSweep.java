package io.sparkcollective.benchmarks;

import io.sparkcollective.core.launch.LocalLauncher;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Multi-process TCP all-reduce sweep on loopback: starts {@code --ranks} JVMs ({@link TcpSweepWorker}),
 * one per rank, and prints rank 0's table. {@code --jvm "<options>"} adds JVM options to every worker (for
 * example a flight recording). Other options are passed to the workers
 * ({@code --sizes b1,b2,.. --reps 7 --target 0.25 --algorithm AUTO --csv path --ranks-per-process 1}; with
 * {@code --ranks-per-process k} the {@code --ranks} processes run k ranks each). {@code --bind core} runs process p
 * on the p-th CPU this JVM may use (through {@code taskset}), as Open MPI binds its ranks to cores when they fit;
 * {@code --bind none} (the default) leaves placement to the scheduler. With two processes on two cores, free
 * placement makes some whole runs of 1 MiB about 1.6x slower than others (the scheduler puts both busy threads on
 * one core for stretches); bound, every run is as fast as the fast ones.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar io.sparkcollective.benchmarks.TcpSweep --ranks 4}.
 */
public final class TcpSweep {
  private TcpSweep() {}

  public static void main(String[] argv) throws Exception {
    List<String> pass = new ArrayList<>();
    int ranks = 2;
    List<String> jvm = new ArrayList<>(List.of("-Xms1g", "-Xmx3g", "-XX:+UseParallelGC"));
    String bind = "none";
    for (int i = 0; i + 1 < argv.length; i += 2) {
      if (argv[i].equals("--ranks")) {
        ranks = Integer.parseInt(argv[i + 1]);
      } else if (argv[i].equals("--bind")) {
        bind = argv[i + 1];
      } else if (argv[i].equals("--jvm")) {
        jvm.addAll(List.of(argv[i + 1].trim().split("\\s+")));
      } else {
        pass.add(argv[i]);
        pass.add(argv[i + 1]);
      }
    }
    List<Integer> cpus = boundCpus(bind, ranks);
    Path logs = Files.createTempDirectory("collective-sweep");
    List<String> args = List.copyOf(pass);
    try (LocalLauncher launcher = LocalLauncher.start(ranks, TcpSweepWorker.class.getName(), r -> args, jvm,
        wrapper(cpus), logs, UUID.randomUUID().toString())) {
      int[] codes = launcher.await(60, TimeUnit.MINUTES);
      if (!cpus.isEmpty()) {
        System.out.println("# processes bound to CPUs " + cpus + " (taskset), one each");
      }
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

  /**
   * The CPU of each process for {@code --bind}: for {@code core}, process p's is the p-th CPU this JVM may use; for
   * {@code none}, an empty list.
   */
  static List<Integer> boundCpus(String bind, int processes) throws IOException {
    switch (bind) {
      case "none":
        return List.of();
      case "core":
        List<Integer> cpus = allowedCpus(Files.readAllLines(Path.of("/proc/self/status")));
        if (processes > cpus.size()) {
          throw new IllegalArgumentException("--bind core: " + processes + " processes but only " + cpus.size()
              + " CPUs to bind them to (" + cpus + "); use --bind none");
        }
        return List.copyOf(cpus.subList(0, processes));
      default:
        throw new IllegalArgumentException("--bind takes core or none, not " + bind);
    }
  }

  /** The command prefix of each process: {@code taskset -c <its CPU>}, or none if {@code cpus} is empty. */
  static IntFunction<List<String>> wrapper(List<Integer> cpus) {
    return p -> cpus.isEmpty() ? List.of() : List.of("taskset", "-c", String.valueOf(cpus.get(p)));
  }

  /** The CPUs this process may run on, from the {@code Cpus_allowed_list} line of {@code /proc/self/status}. */
  static List<Integer> allowedCpus(List<String> status) {
    for (String line : status) {
      if (line.startsWith("Cpus_allowed_list:")) {
        List<Integer> cpus = new ArrayList<>();
        for (String part : line.substring(line.indexOf(':') + 1).trim().split(",")) {
          String[] range = part.split("-");
          int first = Integer.parseInt(range[0].trim());
          int last = range.length > 1 ? Integer.parseInt(range[1].trim()) : first;
          for (int c = first; c <= last; c++) {
            cpus.add(c);
          }
        }
        return cpus;
      }
    }
    throw new IllegalStateException("no Cpus_allowed_list in /proc/self/status");
  }
}
