package io.sparkcollective.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class SweepReportTest {

  /** A sweep table as TcpSweep prints it: bytes, batch, median us, three more columns, busbw, then the rest. */
  private static String table(double... medians) {
    StringBuilder b = new StringBuilder("# bytes batch median_us p10 p90 algbw busbw extra\n");
    long[] sizes = {4, 65536, 1048576};
    for (int i = 0; i < medians.length; i++) {
      b.append(sizes[i]).append(" 8 ").append(medians[i]).append(" 0 0 0 ").append(1000.0 / medians[i])
          .append(" x\n");
    }
    return b.toString();
  }

  @Test
  void shouldTakeForEachSizeTheRowOfTheMedianRound(@TempDir Path dir) throws IOException {
    Files.writeString(dir.resolve("ours-ring.txt"), table(10, 200, 900));
    Files.writeString(dir.resolve("ours-ring.2.txt"), table(30, 100, 1100));
    Files.writeString(dir.resolve("ours-ring.3.txt"), table(20, 300, 1000));
    Files.writeString(dir.resolve("ours-ring.5.txt"), table(1, 1, 1)); // after a gap: not a round of this sitting
    Map<Long, SweepReport.Row> rows = SweepReport.parseRounds(dir, "ours-ring");
    assertEquals(3, rows.size());
    assertEquals(20, rows.get(4L).medianUs);
    assertEquals(200, rows.get(65536L).medianUs);
    assertEquals(1000, rows.get(1048576L).medianUs);
    assertEquals(1.0, rows.get(1048576L).busbw, 1e-12, "the busbw of that same round's row");
  }

  @Test
  void shouldTakeTheLowerMiddleOfAnEvenCountAndASingleFileAsItIs(@TempDir Path dir) throws IOException {
    Files.writeString(dir.resolve("a.txt"), table(40, 5));
    Files.writeString(dir.resolve("a.2.txt"), table(10, 6));
    assertEquals(10, SweepReport.parseRounds(dir, "a").get(4L).medianUs);
    assertEquals(5, SweepReport.parseRounds(dir, "a").get(65536L).medianUs);
    Files.writeString(dir.resolve("b.txt"), table(7));
    assertEquals(7, SweepReport.parseRounds(dir, "b").get(4L).medianUs);
  }

  @Test
  void shouldReportTheMedianRoundsAndTheRangeOfTheRatiosRoundByRound(@TempDir Path dir) throws IOException {
    // Ours and two peers over three rounds; busbw = 1000 / median. At 64 KiB the best peer is the one with the
    // higher busbw in each round: round 1 mpi (100 us), round 2 gloo (50 us), round 3 mpi (200 us); ours 100, 100,
    // 400 us: ratios 100/100 = 1.00, 50/100 = 0.50, 200/400 = 0.50. At 4 B (time): ours 10, 30, 20 over the
    // faster peer's 5, 10, 40: 2.00, 3.00, 0.50.
    Files.writeString(dir.resolve("collective-2.txt"), table(10, 100));
    Files.writeString(dir.resolve("collective-2.2.txt"), table(30, 100));
    Files.writeString(dir.resolve("collective-2.3.txt"), table(20, 400));
    Files.writeString(dir.resolve("mpi-2.txt"), table(5, 100));
    Files.writeString(dir.resolve("mpi-2.2.txt"), table(10, 300));
    Files.writeString(dir.resolve("mpi-2.3.txt"), table(40, 200));
    Files.writeString(dir.resolve("gloo-ring-2.txt"), table(8, 150));
    Files.writeString(dir.resolve("gloo-ring-2.2.txt"), table(60, 50));
    Files.writeString(dir.resolve("gloo-ring-2.3.txt"), table(50, 900));
    Map<String, java.util.List<Map<Long, SweepReport.Row>>> peers = new java.util.LinkedHashMap<>();
    peers.put("mpi", SweepReport.rounds(dir, "mpi-2"));
    peers.put("gloo", SweepReport.rounds(dir, "gloo-ring-2"));
    java.util.List<Map<Long, SweepReport.Row>> ours = SweepReport.rounds(dir, "collective-2");
    assertEquals("0.50-1.00", SweepReport.roundRatios(65536, ours, peers));
    assertEquals("0.50-3.00", SweepReport.roundRatios(4, ours, peers));

    Files.writeString(dir.resolve("placement-2.txt"), "Placement: every process bound.\n");
    SweepReport.main(new String[] {dir.toString(), "2"});
    String report = Files.readString(dir.resolve("report.md"));
    assertTrue(report.contains("GB/s)\n\nPlacement: every process bound.\n\n"), "the placement under its heading: "
        + report);
    // Medians of rounds: ours 4 B 20 us, 64 KiB 100 us; Open MPI 10 and 200; Gloo ring 50 and 150 (busbw 6.667).
    // Best at 4 B: Open MPI (10 us), 20 / 10 = 2.00; at 64 KiB: Gloo ring, busbw 10 / 6.667 = 1.50.
    assertTrue(report.contains("| 4 | 20.0 (50.000) | 10.0 (100.000) | 50.0 (20.000) | Open MPI TCP | 2.00 (time) "
        + "| 0.50-3.00 |"), report);
    assertTrue(report.contains("| 65536 | 100.0 (10.000) | 200.0 (5.000) | 150.0 (6.667) | Gloo ring | 1.50 "
        + "| 0.50-1.00 |"), report);
  }
}
