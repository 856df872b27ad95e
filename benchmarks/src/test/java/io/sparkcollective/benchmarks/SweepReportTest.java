package io.sparkcollective.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
