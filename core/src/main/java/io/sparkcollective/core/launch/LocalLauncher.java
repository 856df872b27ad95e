package io.sparkcollective.core.launch;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Starts the ranks of a group as separate JVMs on this machine, for multi-process tests and benchmarks.
 * It picks free loopback ports, then runs {@code java -cp <this classpath> mainClass --rank r --peers
 * <list> args...} once per rank, each with its output in {@code logDir/rank-r.log}. The group's secret goes in
 * the environment variable {@link #SECRET_ENV}, not on the command line (which every user of the host can
 * read); {@link #secret()} reads it in the rank.
 */
public final class LocalLauncher implements AutoCloseable {
  /** The environment variable a launched rank finds the group's secret in. */
  public static final String SECRET_ENV = "SPARK_COLLECTIVE_SECRET";
  private final List<Process> processes = new ArrayList<>();
  private final List<InetSocketAddress> peers;
  private final Path logDir;

  private LocalLauncher(List<InetSocketAddress> peers, Path logDir) {
    this.peers = peers;
    this.logDir = logDir;
  }

  /** Starts {@code n} ranks of {@code mainClass}. */
  public static LocalLauncher start(int n, String mainClass, List<String> args, List<String> jvmArgs, Path logDir,
      String secret) throws IOException {
    return start(n, mainClass, r -> args, jvmArgs, logDir, secret);
  }

  /** Starts {@code n} ranks of {@code mainClass}, rank r with the extra arguments {@code argsOfRank(r)}. */
  public static LocalLauncher start(int n, String mainClass, IntFunction<List<String>> argsOfRank,
      List<String> jvmArgs, Path logDir, String secret) throws IOException {
    return start(n, mainClass, argsOfRank, jvmArgs, r -> List.of(), logDir, secret);
  }

  /**
   * Starts {@code n} ranks of {@code mainClass}, rank r with the extra arguments {@code argsOfRank(r)} and its
   * command run through {@code wrapperOfRank(r)} (for example {@code taskset -c 1}; empty for none).
   */
  public static LocalLauncher start(int n, String mainClass, IntFunction<List<String>> argsOfRank,
      List<String> jvmArgs, IntFunction<List<String>> wrapperOfRank, Path logDir, String secret)
      throws IOException {
    List<InetSocketAddress> peers = freePorts(n);
    LocalLauncher launcher = new LocalLauncher(peers, logDir);
    logDir.toFile().mkdirs();
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    for (int r = 0; r < n; r++) {
      List<String> cmd = new ArrayList<>(wrapperOfRank.apply(r));
      cmd.add(java);
      cmd.addAll(jvmArgs);
      cmd.add("-cp");
      cmd.add(System.getProperty("java.class.path"));
      cmd.add(mainClass);
      cmd.add("--rank");
      cmd.add(String.valueOf(r));
      cmd.add("--peers");
      cmd.add(PeerList.format(peers));
      cmd.addAll(argsOfRank.apply(r));
      File log = logDir.resolve("rank-" + r + ".log").toFile();
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log);
      pb.environment().put(SECRET_ENV, secret);
      launcher.processes.add(pb.start());
    }
    return launcher;
  }

  /**
   * In a launched rank: the group's secret.
   *
   * @throws IllegalStateException if this process was not started with one
   */
  public static String secret() {
    String s = System.getenv(SECRET_ENV);
    if (s == null || s.isEmpty()) {
      throw new IllegalStateException("no secret in the environment variable " + SECRET_ENV);
    }
    return s;
  }

  private static List<InetSocketAddress> freePorts(int n) throws IOException {
    List<ServerSocket> held = new ArrayList<>();
    List<InetSocketAddress> peers = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        ServerSocket s = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        held.add(s);
        peers.add(InetSocketAddress.createUnresolved("127.0.0.1", s.getLocalPort()));
      }
    } finally {
      for (ServerSocket s : held) {
        s.close();
      }
    }
    return peers;
  }

  public List<InetSocketAddress> peers() {
    return peers;
  }

  public Process process(int rank) {
    return processes.get(rank);
  }

  public Path log(int rank) {
    return logDir.resolve("rank-" + rank + ".log");
  }

  /** Waits for every rank; returns the exit codes (-1 for a rank still running at the deadline, then killed). */
  public int[] await(long timeout, TimeUnit unit) throws InterruptedException {
    long deadline = System.nanoTime() + unit.toNanos(timeout);
    int[] codes = new int[processes.size()];
    for (int r = 0; r < codes.length; r++) {
      Process p = processes.get(r);
      long left = deadline - System.nanoTime();
      if (p.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
        codes[r] = p.exitValue();
      } else {
        p.destroyForcibly();
        codes[r] = -1;
      }
    }
    return codes;
  }

  @Override
  public void close() {
    for (Process p : processes) {
      p.destroyForcibly();
    }
  }
}
