package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.launch.LocalLauncher;
import io.sparkcollective.core.testing.FailureWorker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Ranks as separate JVMs on 127.0.0.1: kill -9 of one rank in the middle of all-reduces. */
@Timeout(180)
class MultiProcessFailureTest {

  @Test
  void shouldFailEveryOtherRankWithin2SecondsNamingTheRankKilledMidAllReduce(@TempDir Path logs) throws Exception {
    int n = 4;
    int victim = 2;
    try (LocalLauncher launcher = LocalLauncher.start(n, FailureWorker.class.getName(), List.of(),
        List.of("-Xmx512m", "-XX:+UseSerialGC"), logs, "multi-process-secret")) {
      long deadline = System.currentTimeMillis() + 90_000;
      for (int r = 0; r < n; r++) {
        while (!Files.readString(launcher.log(r)).contains("JOINED")) {
          assertTrue(System.currentTimeMillis() < deadline, "rank " + r + " did not join: " + log(launcher, r));
          assertTrue(launcher.process(r).isAlive(), "rank " + r + " died: " + log(launcher, r));
          Thread.sleep(20);
        }
      }
      for (int r = 0; r < n; r++) {
        String cmdline = Files.readString(Path.of("/proc/" + launcher.process(r).pid() + "/cmdline"));
        assertTrue(cmdline.contains(FailureWorker.class.getName()) && !cmdline.contains("multi-process-secret"),
            "the secret is on rank " + r + "'s command line, which every user of the host can read");
      }
      Thread.sleep(1000); // well into the all-reduce loop
      long killedAt = System.currentTimeMillis();
      launcher.process(victim).destroyForcibly(); // SIGKILL: no goodbye, the socket just drops
      int[] codes = launcher.await(60, TimeUnit.SECONDS);
      for (int r = 0; r < n; r++) {
        if (r == victim) {
          continue;
        }
        String out = log(launcher, r);
        assertEquals(3, codes[r], "rank " + r + " should fail with the library's exception:\n" + out);
        String line = out.lines().filter(l -> l.startsWith("FAILED ")).findFirst().orElseThrow();
        long failedAt = Long.parseLong(line.split(" ")[1]);
        System.out.println("rank " + r + " failed " + (failedAt - killedAt) + " ms after the kill: " + line);
        assertTrue(failedAt - killedAt < 2000, "rank " + r + " failed " + (failedAt - killedAt) + " ms after the kill");
        assertTrue(line.contains("rank " + victim), "rank " + r + " names the lost rank: " + line);
      }
    }
  }

  private static final List<String> JVM = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

  @Test
  void shouldFailEveryOtherRankWithinTheHeartbeatTimeoutWhenARankIsFrozen(@TempDir Path logs) throws Exception {
    int n = 3;
    int victim = 1;
    long heartbeatTimeoutMs = 2000;
    try (LocalLauncher launcher = LocalLauncher.start(n, FailureWorker.class.getName(),
        r -> List.of("--mode", "loop", "--heartbeat-timeout-ms", Long.toString(heartbeatTimeoutMs)),
        List.of("-Xmx512m", "-XX:+UseSerialGC"), logs, "s")) {
      long deadline = System.currentTimeMillis() + 90_000;
      for (int r = 0; r < n; r++) {
        while (!Files.readString(launcher.log(r)).contains("JOINED")) {
          assertTrue(System.currentTimeMillis() < deadline, "rank " + r + " did not join: " + log(launcher, r));
          Thread.sleep(20);
        }
      }
      Thread.sleep(1000); // well into the all-reduce loop
      long pid = launcher.process(victim).pid();
      long frozenAt = System.currentTimeMillis();
      // SIGSTOP: the process keeps its sockets open but sends nothing, not even heartbeats.
      signal("STOP", pid);
      try {
        for (int r = 0; r < n; r++) {
          if (r != victim) {
            assertTrue(launcher.process(r).waitFor(60, TimeUnit.SECONDS), "rank " + r + " still waits");
          }
        }
      } finally {
        signal("CONT", pid);
      }
      for (int r = 0; r < n; r++) {
        if (r == victim) {
          continue;
        }
        int[] codes = {launcher.process(0).exitValue(), 0, launcher.process(2).exitValue()};
        String line = failure(launcher, codes, r);
        long failedAt = Long.parseLong(line.split(" ")[1]);
        System.out.println("rank " + r + " failed " + (failedAt - frozenAt) + " ms after the freeze: " + line);
        assertTrue(failedAt - frozenAt < heartbeatTimeoutMs + 1000, "rank " + r + " failed " + (failedAt - frozenAt)
            + " ms after the freeze (bound: heartbeat timeout " + heartbeatTimeoutMs + " ms + 1 s)");
        assertTrue(failedAt - frozenAt >= heartbeatTimeoutMs / 2, "rank " + r + " failed before any heartbeat "
            + "could be missed: " + line);
        assertTrue(line.contains("heartbeat") || line.contains("rank " + victim), "names the silence or the rank: "
            + line);
      }
    }
  }

  private static void signal(String sig, long pid) throws Exception {
    Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
    assertTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, "kill -" + sig + " " + pid);
  }

  /** The FAILED line of a rank that must have failed with the library's exception. */
  private static String failure(LocalLauncher launcher, int[] codes, int rank) throws Exception {
    String out = log(launcher, rank);
    assertEquals(3, codes[rank], "rank " + rank + " should fail with the library's exception:\n" + out);
    return out.lines().filter(l -> l.startsWith("FAILED ")).findFirst().orElseThrow();
  }

  @Test
  void shouldFailEveryRankNamingBothSidesWhenOneCallsAnotherLength(@TempDir Path logs) throws Exception {
    int n = 3;
    try (LocalLauncher launcher = LocalLauncher.start(n, FailureWorker.class.getName(),
        r -> List.of("--mode", "mismatch", "--odd-rank", "1"), JVM, logs, "s")) {
      int[] codes = launcher.await(90, TimeUnit.SECONDS);
      for (int r = 0; r < n; r++) {
        String line = failure(launcher, codes, r);
        assertTrue(line.contains("ranks disagree on the length"), line);
        assertTrue(line.contains("count=1001") && line.contains("count=1000"), "names both calls: " + line);
      }
    }
  }

  @Test
  void shouldFailAtTheJoinTimeoutNamingARankThatNeverStarts(@TempDir Path logs) throws Exception {
    int n = 3;
    try (LocalLauncher launcher = LocalLauncher.start(n, FailureWorker.class.getName(),
        r -> List.of("--mode", r == 2 ? "absent" : "loop"), JVM, logs, "s")) {
      long start = System.currentTimeMillis();
      for (int r = 0; r < 2; r++) {
        assertTrue(launcher.process(r).waitFor(60, TimeUnit.SECONDS), "rank " + r + " did not give up");
      }
      int[] codes = {launcher.process(0).exitValue(), launcher.process(1).exitValue(), 0};
      for (int r = 0; r < 2; r++) {
        String line = failure(launcher, codes, r);
        assertTrue(line.contains("rank 2") || line.contains("ranks [2]"), "names the absent rank: " + line);
      }
      assertTrue(System.currentTimeMillis() - start < 40_000);
    }
  }

  @Test
  void shouldNoticeAPeerProcessLostWhileIdle(@TempDir Path logs) throws Exception {
    int n = 3;
    try (LocalLauncher launcher = LocalLauncher.start(n, FailureWorker.class.getName(),
        r -> List.of("--mode", r == 1 ? "exit-after-barrier" : "idle"), JVM, logs, "s")) {
      int[] codes = launcher.await(90, TimeUnit.SECONDS);
      assertEquals(0, codes[1], log(launcher, 1));
      for (int r : new int[] {0, 2}) {
        String line = failure(launcher, codes, r);
        assertTrue(line.contains("rank 1"), "names the lost rank: " + line);
      }
    }
  }

  private static String log(LocalLauncher launcher, int rank) throws Exception {
    return Files.readString(launcher.log(rank));
  }
}
