package io.sparkcollective.benchmarks;

import io.sparkcollective.core.algorithm.AlgorithmChoice;
import io.sparkcollective.core.algorithm.AlgorithmSelector;
import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.simulation.AlgorithmComparison;
import io.sparkcollective.core.simulation.NetworkModel;
import io.sparkcollective.examples.report.LineChart;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The library's algorithms on a simulated network over a grid of group sizes, message sizes, ranks per host
 * and link profiles (benchmarks/README.md "Scale on a simulated network"): the predicted time and busbw of
 * every algorithm, what AUTO picks (with the link rate unknown, as shipped, and told it through
 * {@code algorithm.linkMbps}), and how far each pick is from the best. Writes {@code simulation.md},
 * {@code simulation.csv} and charts into {@code --out}.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.sparkcollective.benchmarks.SimulationSweep \
 *   --ranks 2,3,4,8,16 --bytes 4,65536,1048576 --per-host 1,4 --links 10:10 --out target/simulation
 * </pre>
 *
 * {@code --links} lists profiles as Gbit/s:latency-us; {@code --bytes} message sizes; {@code --ranks} group
 * sizes (a group size that is not a multiple of the ranks per host, or fits on one host, is skipped).
 */
public final class SimulationSweep {
  private SimulationSweep() {}

  /** One point of the grid and what was simulated there. */
  private static final class Point {
    final String link;
    final int perHost;
    final int ranks;
    final long bytes;
    final AlgorithmComparison times;
    final AlgorithmChoice shipped;
    final double shippedOverBest;
    final AlgorithmChoice told;
    final double toldOverBest;

    Point(String link, int perHost, int ranks, long bytes, AlgorithmComparison times, AlgorithmSelector shipped,
        AlgorithmSelector told) {
      this.link = link;
      this.perHost = perHost;
      this.ranks = ranks;
      this.bytes = bytes;
      this.times = times;
      this.shipped = times.pickedBy(shipped);
      this.shippedOverBest = times.overBest(this.shipped);
      this.told = times.pickedBy(told);
      this.toldOverBest = times.overBest(this.told);
    }
  }

  public static void main(String[] argv) throws IOException {
    Args args = new Args(argv);
    long[] ranks = args.getLongs("ranks", new long[] {2, 3, 4, 8, 16, 32, 64, 100, 128, 256, 512, 1000, 1024});
    long[] sizes = args.getLongs("bytes", powersOfFour(4, 1L << 30));
    long[] perHost = args.getLongs("per-host", new long[] {1, 4, 8});
    String[] links = args.get("links", "1:5,10:10,25:10,100:5").split(",");
    Path out = Paths.get(args.get("out", "target/simulation"));
    Files.createDirectories(out);
    CollectiveConfig config = CollectiveConfig.defaults();
    int segmentBytes = args.getInt("segment-bytes", config.segmentBytes());
    double tolerance = args.getDouble("tolerance", 1.10);

    List<Point> points = new ArrayList<>();
    long started = System.nanoTime();
    for (String link : links) {
      String[] p = link.split(":");
      double gbit = Double.parseDouble(p[0]);
      double latencyUs = Double.parseDouble(p[1]);
      // As shipped, for hosts of their own: the link unknown, a group of several measures it (LinkProbe,
      // simulated) and AUTO follows the cost model on what it found.
      AlgorithmSelector unknown = AlgorithmSelector.of(config, false, false, segmentBytes);
      AlgorithmSelector told = new AlgorithmSelector(config.directMaxBytes(), config.directMaxRanks(),
          config.ringMinBytes(), Algorithm.AUTO, Math.round(gbit * 1000), Math.round(latencyUs), segmentBytes);
      for (long k : perHost) {
        NetworkModel model = NetworkModel.of(gbit, latencyUs).ranksPerHost((int) k);
        for (long n : ranks) {
          if (n % k != 0 || n <= k) {
            continue;
          }
          AlgorithmSelector shipped = unknown.measures(Algorithm.AUTO, AlgorithmComparison.placement((int) n, model))
              ? unknown.measured(AlgorithmComparison.measureLink((int) n, segmentBytes, model, config.messageMicros()))
              : unknown;
          for (long bytes : sizes) {
            long t0 = System.nanoTime();
            AlgorithmComparison times = AlgorithmComparison.of((int) n, bytes, segmentBytes, model);
            Point point = new Point(link, (int) k, (int) n, bytes, times, shipped, told);
            points.add(point);
            System.out.printf(Locale.ROOT, "%s Gbit/s:us  %d/host  N=%-5d %-10s best %-26s %10.1f us  AUTO %-22s "
                + "%.2fx  told the link %-22s %.2fx  (%.1f s)%n", link, k, n, LineChart.bytes(bytes), times.best(),
                times.bestSeconds() * 1e6, point.shipped, point.shippedOverBest, point.told, point.toldOverBest,
                (System.nanoTime() - t0) / 1e9);
          }
        }
      }
    }
    double wall = (System.nanoTime() - started) / 1e9;
    String md = report(points, tolerance, segmentBytes, wall);
    Files.writeString(out.resolve("simulation.md"), md);
    Files.writeString(out.resolve("simulation.csv"), csv(points));
    charts(points, out);
    System.out.print(summary(points, tolerance, wall));
    System.out.println("wrote " + out.resolve("simulation.md"));
  }

  private static long[] powersOfFour(long from, long to) {
    List<Long> v = new ArrayList<>();
    for (long b = from; b <= to; b *= 4) {
      v.add(b);
    }
    return v.stream().mapToLong(Long::longValue).toArray();
  }

  private static String summary(List<Point> points, double tolerance, double wall) {
    int offShipped = 0;
    int offTold = 0;
    for (Point p : points) {
      offShipped += p.shippedOverBest > tolerance ? 1 : 0;
      offTold += p.toldOverBest > tolerance ? 1 : 0;
    }
    return String.format(Locale.ROOT, "%d points in %.1f s; AUTO more than %.0f%% slower than the best at %d of "
        + "them as shipped, at %d told the link rate%n", points.size(), wall, (tolerance - 1) * 100, offShipped,
        offTold);
  }

  private static String name(AlgorithmChoice c) {
    if (c.algorithm() == Algorithm.HIERARCHICAL) {
      return "H/" + shortName(c.inner());
    }
    return shortName(c.algorithm());
  }

  private static String shortName(Algorithm a) {
    switch (a) {
      case HALVING_DOUBLING:
        return "HD";
      case DIRECT:
        return "DIRECT";
      case RING:
        return "RING";
      case RING_2D:
        return "RING_2D";
      case RECURSIVE_DOUBLING:
        return "RD";
      default:
        return a.toString();
    }
  }

  private static String report(List<Point> points, double tolerance, int segmentBytes, double wall) {
    StringBuilder s = new StringBuilder("# All-reduce on a simulated network\n\n");
    s.append("float32, segments of ").append(segmentBytes).append(" bytes; the library's algorithms replayed in ")
        .append("virtual time (NetworkModel: links of the given rate each way, a host's ranks share its link; ")
        .append("reduction 8 GB/s, copies 16 GB/s, 1 us per message on each side). Times in us; busbw of the ")
        .append("best in GB/s; AUTO as shipped (the link unknown: every group of several hosts measures it, its ")
        .append("probe simulated, and follows the cost model on what it found) and AUTO told the link rate ")
        .append("(algorithm.linkMbps), each with its ")
        .append("time over the best; '-' = DIRECT or RD left out (its link time alone is over twice the best), ")
        .append("an empty cell not a candidate at that group size (RING_2D needs factors).\n\n");
    s.append(summary(points, tolerance, wall)).append('\n');
    for (int from = 0; from < points.size(); ) {
      Point first = points.get(from);
      int to = from;
      while (to < points.size() && points.get(to).link.equals(first.link) && points.get(to).perHost == first.perHost) {
        to++;
      }
      // The section's columns: every candidate any of its group sizes had, in the order they were simulated.
      List<AlgorithmChoice> columns = new ArrayList<>();
      for (Point p : points.subList(from, to)) {
        int at = 0;
        for (AlgorithmChoice c : p.times.seconds().keySet()) {
          int i = columns.indexOf(c);
          if (i < 0) {
            columns.add(at, c);
            i = at;
          }
          at = i + 1;
        }
      }
      s.append(String.format(Locale.ROOT, "%n## %s Gbit/s, %s us latency, %d rank%s per host%n%n",
          first.link.split(":")[0], first.link.split(":")[1], first.perHost, first.perHost == 1 ? "" : "s"));
      s.append("| N | bytes |");
      for (AlgorithmChoice c : columns) {
        s.append(' ').append(name(c)).append(" |");
      }
      s.append(" best busbw | AUTO | / best | AUTO told link | / best |\n|");
      for (int i = 0; i < columns.size() + 7; i++) {
        s.append("---:|");
      }
      s.append('\n');
      for (Point p : points.subList(from, to)) {
        s.append(String.format(Locale.ROOT, "| %d | %s |", p.ranks, LineChart.bytes(p.bytes)));
        for (AlgorithmChoice c : columns) {
          Double t = p.times.seconds().get(c);
          s.append(t == null ? " |" : Double.isNaN(t) ? " - |" : String.format(Locale.ROOT, " %.1f |", t * 1e6));
        }
        double best = p.times.bestSeconds();
        long wire = Math.max(Float.BYTES, p.bytes / Float.BYTES * Float.BYTES);
        s.append(String.format(Locale.ROOT, " %.3f | %s | %s | %s | %s |%n",
            2.0 * (p.ranks - 1) / p.ranks * wire / best / 1e9, name(p.shipped),
            mark(p.shippedOverBest, tolerance), name(p.told),
            mark(p.toldOverBest, tolerance)));
      }
      from = to;
    }
    return s.toString();
  }

  private static String mark(double ratio, double tolerance) {
    return String.format(Locale.ROOT, ratio > tolerance ? "**%.2f**" : "%.2f", ratio);
  }

  private static String csv(List<Point> points) {
    StringBuilder s = new StringBuilder("gbit,latency_us,ranks_per_host,ranks,bytes,algorithm,seconds,"
        + "auto,auto_over_best,auto_told_link,auto_told_link_over_best\n");
    for (Point p : points) {
      for (Map.Entry<AlgorithmChoice, Double> e : p.times.seconds().entrySet()) {
        s.append(String.format(Locale.ROOT, "%s,%s,%d,%d,%d,%s,%.9g,%s,%.4f,%s,%.4f%n", p.link.split(":")[0],
            p.link.split(":")[1], p.perHost, p.ranks, p.bytes, name(e.getKey()), e.getValue(),
            name(p.shipped), p.shippedOverBest, name(p.told), p.toldOverBest));
      }
    }
    return s.toString();
  }

  /** Per link profile and ranks per host: busbw of every algorithm at the largest N, and AUTO over best per N. */
  private static void charts(List<Point> points, Path out) throws IOException {
    Map<String, List<Point>> groups = new LinkedHashMap<>();
    for (Point p : points) {
      groups.computeIfAbsent(p.link + "|" + p.perHost, g -> new ArrayList<>()).add(p);
    }
    for (Map.Entry<String, List<Point>> g : groups.entrySet()) {
      List<Point> ps = g.getValue();
      Point first = ps.get(0);
      String tag = first.link.replace(':', '-') + "-" + first.perHost;
      String title = String.format(Locale.ROOT, "%s Gbit/s, %s us, %d per host", first.link.split(":")[0],
          first.link.split(":")[1], first.perHost);
      int maxN = ps.stream().mapToInt(p -> p.ranks).max().getAsInt();
      LineChart busbw = new LineChart("simulated all-reduce busbw, N=" + maxN + ", " + title, "bytes",
          "busbw (GB/s)").bytesX().logY();
      Map<AlgorithmChoice, List<double[]>> byAlgorithm = new LinkedHashMap<>();
      for (Point p : ps) {
        if (p.ranks != maxN) {
          continue;
        }
        for (Map.Entry<AlgorithmChoice, Double> e : p.times.seconds().entrySet()) {
          double bus = 2.0 * (p.ranks - 1) / p.ranks * Math.max(4, p.bytes) / e.getValue() / 1e9;
          byAlgorithm.computeIfAbsent(e.getKey(), c -> new ArrayList<>()).add(new double[] {p.bytes, bus});
        }
      }
      for (Map.Entry<AlgorithmChoice, List<double[]>> e : byAlgorithm.entrySet()) {
        add(busbw, name(e.getKey()), e.getValue(), false);
      }
      busbw.write(out.resolve("busbw-" + tag + ".png"));
      LineChart ratio = new LineChart("AUTO told the link over the best, " + title, "bytes", "time / best time")
          .bytesX();
      Map<Integer, List<double[]>> byN = new LinkedHashMap<>();
      for (Point p : ps) {
        byN.computeIfAbsent(p.ranks, n -> new ArrayList<>()).add(new double[] {p.bytes, p.toldOverBest});
      }
      for (Map.Entry<Integer, List<double[]>> e : byN.entrySet()) {
        add(ratio, "N=" + e.getKey(), e.getValue(), false);
      }
      ratio.write(out.resolve("auto-" + tag + ".png"));
    }
  }

  private static void add(LineChart chart, String name, List<double[]> xy, boolean dashed) {
    double[] x = new double[xy.size()];
    double[] y = new double[xy.size()];
    for (int i = 0; i < x.length; i++) {
      x[i] = xy.get(i)[0];
      y[i] = xy.get(i)[1];
    }
    chart.add(name, x, y, dashed);
  }
}
