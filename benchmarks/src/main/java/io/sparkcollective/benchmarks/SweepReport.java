package io.sparkcollective.benchmarks;

import io.sparkcollective.examples.report.LineChart;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns the outputs of {@code benchmarks/compare-tcp.sh} into {@code report.md} (latency and busbw of
 * spark-collective against Open MPI over TCP, as ratios from the same sitting, with the iperf3 ceiling) and
 * {@code chart.png} and {@code chart.svg} (busbw against message size).
 */
public final class SweepReport {
  private SweepReport() {}

  /** One row of the shared table format: bytes, K, median, min, max, algbw, busbw, check. */
  static final class Row {
    final long bytes;
    /** All-reduces per repetition, back to back: the median is their time over their number. */
    final int batch;
    final double medianUs;
    final double busbw;

    Row(long bytes, int batch, double medianUs, double busbw) {
      this.bytes = bytes;
      this.batch = batch;
      this.medianUs = medianUs;
      this.busbw = busbw;
    }
  }

  static Map<Long, Row> parseTable(Path file) throws IOException {
    Map<Long, Row> rows = new LinkedHashMap<>();
    if (!Files.exists(file)) {
      return rows;
    }
    for (String line : Files.readAllLines(file)) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 8 && f[0].matches("\\d+") && f[1].matches("\\d+")) {
        rows.put(Long.parseLong(f[0]), new Row(Long.parseLong(f[0]), Integer.parseInt(f[1]),
            Double.parseDouble(f[2]), Double.parseDouble(f[6])));
      }
    }
    return rows;
  }

  static double iperfGbytesPerSecond(Path json) throws IOException {
    if (!Files.exists(json)) {
      return Double.NaN;
    }
    String s = Files.readString(json);
    int at = s.lastIndexOf("\"sum_received\"");
    Matcher m = Pattern.compile("\"bits_per_second\"\\s*:\\s*([0-9.eE+]+)").matcher(s);
    double v = Double.NaN;
    if (at >= 0 && m.find(at)) {
      v = Double.parseDouble(m.group(1)) / 8e9;
    }
    return v;
  }

  public static void main(String[] args) throws IOException {
    Path dir = Paths.get(args[0]);
    boolean shm = "shm".equals(System.getProperty("transport", "tcp"));
    String peer = shm ? "Open MPI shm" : "Open MPI TCP";
    StringBuilder md = new StringBuilder(shm
        ? "# Same-host all-reduce: spark-collective with shared-memory payloads vs Open MPI (shared memory)\n\n"
        : "# TCP all-reduce on loopback: spark-collective vs Open MPI (TCP)\n\n");
    md.append("float32 SUM, one process per rank, medians of 7 repetitions, measured back to back. Ratios < 1 for ")
        .append("latency and > 1 for busbw favour spark-collective.\n");
    LineChart chart = new LineChart("all-reduce busbw vs message size, float32 SUM on loopback", "bytes",
        "busbw (GB/s)").bytesX();
    for (int i = 1; i < args.length; i++) {
      int n = Integer.parseInt(args[i]);
      Map<Long, Row> mpi = parseTable(dir.resolve("mpi-" + n + ".txt"));
      Map<Long, Row> ours = parseTable(dir.resolve("collective-" + n + ".txt"));
      double iperf = iperfGbytesPerSecond(dir.resolve("iperf-" + n + ".json"));
      md.append(String.format(Locale.ROOT, "%n## N = %d (iperf3 loopback, %d streams of 1 MiB writes: %.2f GB/s)%n%n",
          n, n, iperf));
      if (!shm) {
        // All N ranks together put 2(N-1)/N x S bytes each through the loopback, which moves `iperf` bytes
        // per second in total, so t >= 2(N-1) S / iperf and busbw = 2(N-1)/N x S / t <= iperf / N.
        md.append(String.format(Locale.ROOT, "Loopback ceiling for an all-reduce over TCP: busbw <= iperf3 / N = "
            + "%.3f GB/s.%n%n", iperf / n));
      }
      md.append("| bytes | MPI median us | ours median us | latency ratio | MPI busbw GB/s | ours busbw GB/s | ")
          .append("busbw ratio |\n|---:|---:|---:|---:|---:|---:|---:|\n");
      for (Map.Entry<Long, Row> e : ours.entrySet()) {
        Row o = e.getValue();
        Row m = mpi.get(e.getKey());
        md.append(String.format(Locale.ROOT, "| %d | %s | %.1f | %s | %s | %.3f | %s |%n", o.bytes,
            m == null ? "-" : String.format(Locale.ROOT, "%.1f", m.medianUs), o.medianUs,
            m == null ? "-" : String.format(Locale.ROOT, "%.2f", o.medianUs / m.medianUs),
            m == null ? "-" : String.format(Locale.ROOT, "%.3f", m.busbw), o.busbw,
            m == null || m.busbw < 0.001 ? "-" : String.format(Locale.ROOT, "%.2f", o.busbw / m.busbw)));
      }
      addSeries(chart, "spark-collective N=" + n, ours, false);
      addSeries(chart, peer + " N=" + n, mpi, true);
    }
    Files.writeString(dir.resolve("report.md"), md.toString());
    chart.write(dir.resolve("chart.png"));
    System.out.print(md);
  }

  private static void addSeries(LineChart chart, String name, Map<Long, Row> rows, boolean dashed) {
    double[] x = new double[rows.size()];
    double[] y = new double[rows.size()];
    int i = 0;
    for (Row r : rows.values()) {
      x[i] = r.bytes;
      y[i++] = r.busbw;
    }
    chart.add(name, x, y, dashed);
  }
}
