package io.sparkcollective.benchmarks;

import io.sparkcollective.examples.report.LineChart;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns the outputs of {@code benchmarks/compare-tcp.sh} into {@code report.md} (latency and busbw of
 * spark-collective against every peer that ran: Open MPI, Gloo's three all-reduces, XGBoost4J's collective;
 * each cell's ratio against the best peer of that cell, all from the same sitting, with the iperf3 ceiling) and
 * {@code chart.png} (busbw against message size).
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

  /**
   * The table of {@code <name>.txt} and of its later rounds ({@code <name>.2.txt}, {@code <name>.3.txt}, ...: the
   * same sweep run again in the same sitting): for each size the row whose median is the median of the rounds'
   * (the lower middle one for an even count). A single file is its own table.
   */
  static Map<Long, Row> parseRounds(Path dir, String name) throws IOException {
    return medianRound(rounds(dir, name));
  }

  /** The tables of {@code <name>.txt}, {@code <name>.2.txt}, ... up to the first missing round. */
  static List<Map<Long, Row>> rounds(Path dir, String name) throws IOException {
    List<Map<Long, Row>> rounds = new ArrayList<>();
    rounds.add(parseTable(dir.resolve(name + ".txt")));
    for (int k = 2; Files.exists(dir.resolve(name + "." + k + ".txt")); k++) {
      rounds.add(parseTable(dir.resolve(name + "." + k + ".txt")));
    }
    return rounds;
  }

  /** For each size of the first round, the row whose median is the median of the rounds' (the lower middle). */
  static Map<Long, Row> medianRound(List<Map<Long, Row>> rounds) {
    Map<Long, Row> rows = new LinkedHashMap<>();
    for (long bytes : rounds.get(0).keySet()) {
      List<Row> seen = new ArrayList<>();
      for (Map<Long, Row> r : rounds) {
        if (r.containsKey(bytes)) {
          seen.add(r.get(bytes));
        }
      }
      seen.sort(Comparator.comparingDouble(r -> r.medianUs));
      rows.put(bytes, seen.get((seen.size() - 1) / 2));
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

  /** The peers compare-tcp.sh can run, by the name of their output ({@code <name>-<N>.txt}) and their label. */
  private static final String[][] PEERS = {{"mpi", "Open MPI"}, {"gloo-ring", "Gloo ring"},
      {"gloo-ring_chunked", "Gloo ring_chunked"}, {"gloo-halving_doubling", "Gloo halving_doubling"},
      {"xgboost4j", "XGBoost4J"}};

  public static void main(String[] args) throws IOException {
    Path dir = Paths.get(args[0]);
    boolean shm = "shm".equals(System.getProperty("transport", "tcp"));
    String mpiLabel = shm ? "Open MPI shm" : "Open MPI TCP";
    StringBuilder md = new StringBuilder(shm
        ? "# Same-host all-reduce: spark-collective through shared-memory rings vs Open MPI (shared memory)\n\n"
        : "# TCP all-reduce on loopback: spark-collective vs every peer\n\n");
    md.append("float32 SUM, one process per rank, medians of 7 repetitions, every program back to back in one ")
        .append("sitting (with several rounds, each program's median round per cell). Ratios are ours over the best ")
        .append("peer of the cell: below 1 for latency (4 bytes) and above 1 for busbw favour spark-collective; ")
        .append("\"round by round\" is the range of the ratios the rounds gave one at a time.\n");
    LineChart chart = new LineChart("all-reduce busbw vs message size, float32 SUM on loopback", "bytes",
        "busbw (GB/s)").bytesX();
    for (int i = 1; i < args.length; i++) {
      int n = Integer.parseInt(args[i]);
      List<Map<Long, Row>> ourRounds = rounds(dir, "collective-" + n);
      Map<Long, Row> ours = medianRound(ourRounds);
      Map<String, Map<Long, Row>> peers = new LinkedHashMap<>();
      Map<String, List<Map<Long, Row>>> peerRounds = new LinkedHashMap<>();
      for (String[] p : PEERS) {
        List<Map<Long, Row>> r = rounds(dir, p[0] + "-" + n);
        if (!r.get(0).isEmpty()) {
          String label = p[0].equals("mpi") ? mpiLabel : p[1];
          peers.put(label, medianRound(r));
          peerRounds.put(label, r);
        }
      }
      int roundCount = ourRounds.size();
      double iperf = iperfGbytesPerSecond(dir.resolve("iperf-" + n + ".json"));
      md.append(String.format(Locale.ROOT, "%n## N = %d (iperf3 loopback, %d streams of 1 MiB writes: %.2f GB/s)%n%n",
          n, n, iperf));
      Path placement = dir.resolve("placement-" + n + ".txt");
      if (Files.exists(placement)) {
        md.append(Files.readString(placement).trim()).append("\n\n");
      }
      if (!shm) {
        // All N ranks together put 2(N-1)/N x S bytes each through the loopback, which moves `iperf` bytes
        // per second in total, so t >= 2(N-1) S / iperf and busbw = 2(N-1)/N x S / t <= iperf / N.
        md.append(String.format(Locale.ROOT, "Loopback ceiling for an all-reduce over TCP: busbw <= iperf3 / N = "
            + "%.3f GB/s.%n%n", iperf / n));
      }
      md.append("Median us per all-reduce (busbw GB/s).\n\n| bytes | ours |");
      for (String peer : peers.keySet()) {
        md.append(' ').append(peer).append(" |");
      }
      md.append(" best peer | ours / best |").append(roundCount > 1 ? " round by round |" : "")
          .append("\n|---:|---:|");
      for (int k = 0; k < peers.size(); k++) {
        md.append("---:|");
      }
      md.append("---|---:|").append(roundCount > 1 ? "---:|" : "").append('\n');
      for (Map.Entry<Long, Row> e : ours.entrySet()) {
        Row o = e.getValue();
        boolean latency = o.bytes <= 4;
        md.append(String.format(Locale.ROOT, "| %d | %s |", o.bytes, cell(o)));
        String best = null;
        Row bestRow = null;
        for (Map.Entry<String, Map<Long, Row>> p : peers.entrySet()) {
          Row m = p.getValue().get(o.bytes);
          md.append(' ').append(m == null ? "-" : cell(m)).append(" |");
          if (m != null && (bestRow == null || (latency ? m.medianUs < bestRow.medianUs : m.busbw > bestRow.busbw))) {
            best = p.getKey();
            bestRow = m;
          }
        }
        String ratio = bestRow == null ? "-" : latency
            ? String.format(Locale.ROOT, "%.2f (time)", o.medianUs / bestRow.medianUs)
            : String.format(Locale.ROOT, "%.2f", o.busbw / bestRow.busbw);
        md.append(' ').append(best == null ? "-" : best).append(" | ").append(ratio).append(" |");
        if (roundCount > 1) {
          md.append(' ').append(roundRatios(o.bytes, ourRounds, peerRounds)).append(" |");
        }
        md.append('\n');
      }
      addSeries(chart, "spark-collective N=" + n, ours, false);
      for (Map.Entry<String, Map<Long, Row>> p : peers.entrySet()) {
        addSeries(chart, p.getKey() + " N=" + n, p.getValue(), true);
      }
    }
    Files.writeString(dir.resolve("report.md"), md.toString());
    chart.write(dir.resolve("chart.png"));
    System.out.print(md);
  }

  /**
   * The lowest and highest of the ratios that each round gives on its own (ours in round k over the best peer in
   * round k; time for 4 bytes, busbw otherwise): how far one sitting's ratio could have been from the median's.
   */
  static String roundRatios(long bytes, List<Map<Long, Row>> ours, Map<String, List<Map<Long, Row>>> peers) {
    double lo = Double.POSITIVE_INFINITY;
    double hi = Double.NEGATIVE_INFINITY;
    boolean latency = bytes <= 4;
    for (int k = 0; k < ours.size(); k++) {
      Row o = ours.get(k).get(bytes);
      Row best = null;
      for (List<Map<Long, Row>> p : peers.values()) {
        Row m = k < p.size() ? p.get(k).get(bytes) : null;
        if (m != null && (best == null || (latency ? m.medianUs < best.medianUs : m.busbw > best.busbw))) {
          best = m;
        }
      }
      if (o != null && best != null) {
        double r = latency ? o.medianUs / best.medianUs : o.busbw / best.busbw;
        lo = Math.min(lo, r);
        hi = Math.max(hi, r);
      }
    }
    return lo > hi ? "-" : String.format(Locale.ROOT, "%.2f-%.2f", lo, hi);
  }

  private static String cell(Row r) {
    return String.format(Locale.ROOT, r.busbw >= 0.001 ? "%.1f (%.3f)" : "%.1f", r.medianUs, r.busbw);
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
