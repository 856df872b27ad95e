package io.sparkcollective.core.transport.netty;

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

  private static String log(LocalLauncher launcher, int rank) throws Exception {
    return Files.readString(launcher.log(rank));
  }
}
