package io.sparkcollective.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The report of {@code benchmarks/bed/bench.sh}: for every link rate and number of hosts, spark-collective's
 * busbw as a share of the link rate (each host's link is limited to that rate in each direction, so an
 * all-reduce's busbw cannot exceed it), what bfloat16 on the wire gains in algbw, the peers' busbw beside it
 * (Gloo, Open MPI), and the Spark sync benchmark's all-reduce in the same terms.
 *
 * <p>Run: {@code BedReport <dir> <rate>... -- <hosts>...}, the rates in tc's units (1gbit, 10gbit).
 */
public final class BedReport {
  /** The peers' outputs, beside ours: Gloo's two algorithms and Open MPI over TCP. */
  private static final String[] PEERS = {"gloo-ring_chunked", "gloo-halving_doubling", "mpi"};

  private BedReport() {}

  /** tc's rate units to bytes per second. */
  static double rateBytes(String rate) {
    String r = rate.toLowerCase(Locale.ROOT);
    double scale = r.endsWith("gbit") ? 1e9 : r.endsWith("mbit") ? 1e6 : r.endsWith("kbit") ? 1e3 : 1;
    return Double.parseDouble(r.replaceAll("[a-z]+$", "")) * scale / 8;
  }

  /** Median milliseconds of allReduce and of its bfloat16 variant per parameter count, from spark-sync.md. */
  static Map<Long, double[]> sparkSync(Path md) throws IOException {
    Map<Long, double[]> rows = new java.util.LinkedHashMap<>();
    if (!Files.exists(md)) {
      return rows;
    }
    for (String line : Files.readAllLines(md)) {
      String[] f = line.split("\\|");
      if (f.length > 3 && f[1].trim().matches("\\d+[KM]?")) {
        String p = f[1].trim();
        long params = p.endsWith("M") ? Long.parseLong(p.substring(0, p.length() - 1)) * 1_000_000
            : p.endsWith("K") ? Long.parseLong(p.substring(0, p.length() - 1)) * 1_000 : Long.parseLong(p);
        rows.put(params, new double[] {firstNumber(f[2]), firstNumber(f[3])});
        if (rows.size() > 64) {
          break;
        }
      }
      if (line.startsWith("Heap allocated")) {
        break;
      }
    }
    return rows;
  }

  private static double firstNumber(String cell) {
    String t = cell.trim().split("\\s+")[0];
    return t.matches("[0-9.]+") ? Double.parseDouble(t) : Double.NaN;
  }

  private static String pct(double share) {
    return Double.isNaN(share) ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * share);
  }

  private static String num(double v, String format) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, format, v);
  }

  /** Our algorithms forced, where the run has them (ALGORITHMS=...): AUTO's time against the best one's. */
  private static void autoTable(StringBuilder md, Path d, Map<Long, SweepReport.Row> auto) throws IOException {
    String[] algorithms = {"RING", "HALVING_DOUBLING", "DIRECT"};
    List<Map<Long, SweepReport.Row>> forced = new ArrayList<>();
    boolean any = false;
    for (String a : algorithms) {
      Map<Long, SweepReport.Row> rows = SweepReport.parseTable(d.resolve("ours-" + a + ".txt"));
      forced.add(rows);
      any |= !rows.isEmpty();
    }
    if (!any) {
      return;
    }
    md.append("\nAUTO against each algorithm forced (median us; AUTO / best > 1.10 means AUTO picked wrong):\n\n")
        .append("| bytes | AUTO | RING | HALVING_DOUBLING | DIRECT | best | AUTO / best |\n")
        .append("|---:|---:|---:|---:|---:|---|---:|\n");
    for (Map.Entry<Long, SweepReport.Row> e : auto.entrySet()) {
      StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "| %d | %.1f |", e.getKey(),
          e.getValue().medianUs));
      double best = Double.NaN;
      String bestName = "-";
      for (int i = 0; i < algorithms.length; i++) {
        SweepReport.Row r = forced.get(i).get(e.getKey());
        row.append(r == null ? " - |" : String.format(Locale.ROOT, " %.1f |", r.medianUs));
        if (r != null && (Double.isNaN(best) || r.medianUs < best)) {
          best = r.medianUs;
          bestName = algorithms[i];
        }
      }
      md.append(row).append(' ').append(bestName).append(" | ")
          .append(num(e.getValue().medianUs / best, "%.2f")).append(" |\n");
    }
  }

  public static void main(String[] args) throws IOException {
    Path dir = Paths.get(args[0]);
    List<String> rates = new ArrayList<>();
    List<Integer> hosts = new ArrayList<>();
    boolean afterSeparator = false;
    for (int i = 1; i < args.length; i++) {
      if (args[i].equals("--")) {
        afterSeparator = true;
      } else if (afterSeparator) {
        hosts.add(Integer.parseInt(args[i]));
      } else {
        rates.add(args[i]);
      }
    }
    StringBuilder md = new StringBuilder("# All-reduce across emulated hosts (benchmarks/bed/bench.sh)\n\n")
        .append("One process per host, every host's link limited to the rate in both directions (tbf), float32 SUM, ")
        .append("medians; busbw = algbw x 2(N-1)/N, whose ceiling is the link rate. bf16 gain = algbw with bfloat16 ")
        .append("on the wire over float32's; vs best peer = ours over the best of Gloo's ring_chunked, Gloo's ")
        .append("halving_doubling and Open MPI (> 1 favours spark-collective).\n");
    for (String rate : rates) {
      double link = rateBytes(rate);
      for (int n : hosts) {
        Path d = dir.resolve(rate + "-" + n);
        if (!Files.isDirectory(d)) {
          continue;
        }
        double iperf = SweepReport.iperfGbytesPerSecond(d.resolve("iperf.json"));
        md.append(String.format(Locale.ROOT, "%n## %d hosts at %s (%.3f GB/s per direction; iperf3 host 1 -> 2: "
            + "%.3f GB/s)%n%n", n, rate, link / 1e9, iperf));
        Map<Long, SweepReport.Row> f32 = SweepReport.parseTable(d.resolve("ours-f32.txt"));
        Map<Long, SweepReport.Row> bf16 = SweepReport.parseTable(d.resolve("ours-bf16.txt"));
        List<Map<Long, SweepReport.Row>> peers = new ArrayList<>();
        for (String p : PEERS) {
          peers.add(SweepReport.parseTable(d.resolve(p + ".txt")));
        }
        md.append("| bytes | ours us | ours busbw GB/s | of link | bf16 busbw GB/s | bf16 gain | Gloo ring_chunked ")
            .append("busbw | Gloo halving_doubling busbw | Open MPI busbw | vs best peer |\n")
            .append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Map.Entry<Long, SweepReport.Row> e : f32.entrySet()) {
          SweepReport.Row o = e.getValue();
          SweepReport.Row b = bf16.get(e.getKey());
          double best = Double.NaN;
          String[] g = new String[PEERS.length];
          for (int i = 0; i < PEERS.length; i++) {
            SweepReport.Row r = peers.get(i).get(e.getKey());
            g[i] = r == null ? "-" : String.format(Locale.ROOT, "%.4f", r.busbw);
            if (r != null && (Double.isNaN(best) || r.busbw > best)) {
              best = r.busbw;
            }
          }
          md.append(String.format(Locale.ROOT, "| %d | %.1f | %.4f | %s | %s | %s | %s | %s | %s | %s |%n",
              o.bytes, o.medianUs, o.busbw, pct(o.busbw * 1e9 / link), b == null ? "-" : num(b.busbw, "%.4f"),
              b == null ? "-" : num(o.medianUs / b.medianUs, "%.2fx"), g[0], g[1], g[2],
              num(o.busbw / best, "%.2fx")));
        }
        autoTable(md, d, f32);
        Map<Long, double[]> spark = sparkSync(d.resolve("spark").resolve("spark-sync.md"));
        if (!spark.isEmpty()) {
          md.append("\nSpark sync benchmark (standalone cluster, a 1-core executor per host, the driver on the ")
              .append("bridge):\n\n| floats | allReduce ms | busbw of link | bf16 wire ms | bf16 gain |\n")
              .append("|---:|---:|---:|---:|---:|\n");
          for (Map.Entry<Long, double[]> e : spark.entrySet()) {
            double ms = e.getValue()[0];
            double bms = e.getValue()[1];
            double busbw = 2.0 * (n - 1) / n * e.getKey() * 4 / (ms / 1e3);
            md.append(String.format(Locale.ROOT, "| %d | %s | %s | %s | %s |%n", e.getKey(), num(ms, "%.1f"),
                pct(busbw / link), num(bms, "%.1f"), num(ms / bms, "%.2fx")));
          }
        }
      }
    }
    Files.writeString(dir.resolve("report.md"), md.toString());
    System.out.print(md);
  }
}
