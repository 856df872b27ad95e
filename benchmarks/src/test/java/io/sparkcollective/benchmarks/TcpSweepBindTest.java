package io.sparkcollective.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.launch.LocalLauncher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class TcpSweepBindTest {

  @Test
  void shouldReadTheAllowedCpusOfEveryListForm() {
    assertEquals(List.of(0, 1), TcpSweep.allowedCpus(List.of("Name:\tjava", "Cpus_allowed_list:\t0-1")));
    assertEquals(List.of(0, 2, 3, 7), TcpSweep.allowedCpus(List.of("Cpus_allowed_list:\t0,2-3,7")));
    assertEquals(List.of(5), TcpSweep.allowedCpus(List.of("Cpus_allowed_list:\t5")));
    assertThrows(IllegalStateException.class, () -> TcpSweep.allowedCpus(List.of("Name:\tjava")));
  }

  @Test
  void shouldRefuseMoreProcessesThanCpusAndAnUnknownPolicy() throws Exception {
    int cpus = TcpSweep.allowedCpus(Files.readAllLines(Path.of("/proc/self/status"))).size();
    IllegalArgumentException over = assertThrows(IllegalArgumentException.class,
        () -> TcpSweep.boundCpus("core", cpus + 1));
    assertTrue(over.getMessage().contains((cpus + 1) + " processes but only " + cpus + " CPUs"), over.getMessage());
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> TcpSweep.boundCpus("socket", 1));
    assertTrue(unknown.getMessage().contains("not socket"), unknown.getMessage());
    assertEquals(List.of(), TcpSweep.boundCpus("none", cpus + 1));
    assertEquals(List.of(), TcpSweep.wrapper(List.of()).apply(0));
  }

  @Test
  void shouldRunEachBoundProcessOnItsOwnCpuOnly(@TempDir Path logs) throws Exception {
    List<Integer> cpus = TcpSweep.allowedCpus(Files.readAllLines(Path.of("/proc/self/status")));
    int processes = Math.min(2, cpus.size());
    IntFunction<List<String>> wrapper = TcpSweep.wrapper(TcpSweep.boundCpus("core", processes));
    try (LocalLauncher launcher = LocalLauncher.start(processes, PrintAllowedCpus.class.getName(),
        r -> List.of(), List.of(), wrapper, logs, UUID.randomUUID().toString())) {
      int[] codes = launcher.await(30, TimeUnit.SECONDS);
      for (int p = 0; p < processes; p++) {
        assertEquals(0, codes[p], Files.readString(launcher.log(p)));
        assertEquals("allowed " + List.of(cpus.get(p)), Files.readString(launcher.log(p)).trim(),
            "process " + p + " runs on CPU " + cpus.get(p) + " alone");
      }
    }
  }

  /** A launched process that prints the CPUs it may run on. */
  public static final class PrintAllowedCpus {
    private PrintAllowedCpus() {}

    public static void main(String[] args) throws Exception {
      System.out.println("allowed " + TcpSweep.allowedCpus(Files.readAllLines(Path.of("/proc/self/status"))));
    }
  }
}
