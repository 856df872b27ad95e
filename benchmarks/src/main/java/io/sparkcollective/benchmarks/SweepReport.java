package io.sparkcollective.benchmarks;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;

/**
 * Turns the outputs of {@code benchmarks/compare-tcp.sh} into {@code report.md} (latency and busbw of
 * spark-collective against Open MPI over TCP, as ratios from the same sitting, with the iperf3 ceiling) and
 * {@code chart.png} (busbw against message size).
 */
public final class SweepReport {
  private SweepReport() {}

  /** One row of the shared table format: bytes, K, median, min, max, algbw, busbw, check. */
  static final class Row {
    final long bytes;
    final double medianUs;
    final double busbw;

    Row(long bytes, double medianUs, double busbw) {
      this.bytes = bytes;
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
        rows.put(Long.parseLong(f[0]), new Row(Long.parseLong(f[0]), Double.parseDouble(f[2]),
            Double.parseDouble(f[6])));
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
    StringBuilder md = new StringBuilder("# TCP all-reduce on loopback: spark-collective vs Open MPI (TCP)\n\n");
    md.append("float32 SUM, one process per rank, medians of 7 repetitions, measured back to back. Ratios < 1 for ")
        .append("latency and > 1 for busbw favour spark-collective.\n");
    List<Series> series = new ArrayList<>();
    for (int i = 1; i < args.length; i++) {
      int n = Integer.parseInt(args[i]);
      Map<Long, Row> mpi = parseTable(dir.resolve("mpi-" + n + ".txt"));
      Map<Long, Row> ours = parseTable(dir.resolve("collective-" + n + ".txt"));
      double iperf = iperfGbytesPerSecond(dir.resolve("iperf-" + n + ".json"));
      md.append(String.format(Locale.ROOT, "%n## N = %d (iperf3 loopback, %d streams: %.2f GB/s)%n%n", n, n, iperf));
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
      series.add(new Series("spark-collective N=" + n, ours, new Color(0x1f77b4), i - 1));
      series.add(new Series("Open MPI TCP N=" + n, mpi, new Color(0xd62728), i - 1));
    }
    Files.writeString(dir.resolve("report.md"), md.toString());
    chart(series, dir.resolve("chart.png"));
    System.out.print(md);
  }

  private static final class Series {
    final String name;
    final Map<Long, Row> rows;
    final Color color;
    final int dash;

    Series(String name, Map<Long, Row> rows, Color color, int dash) {
      this.name = name;
      this.rows = rows;
      this.color = color;
      this.dash = dash;
    }
  }

  private static void chart(List<Series> series, Path png) throws IOException {
    int w = 900;
    int h = 520;
    int left = 80;
    int right = 260;
    int top = 40;
    int bottom = 60;
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, w, h);
    double maxBus = 0.1;
    for (Series s : series) {
      for (Row r : s.rows.values()) {
        maxBus = Math.max(maxBus, r.busbw);
      }
    }
    double minLog = Math.log10(4);
    double maxLog = Math.log10(64 << 20);
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    g.drawString("all-reduce busbw (GB/s) vs message size, float32 SUM on loopback", left, 22);
    g.drawLine(left, h - bottom, w - right, h - bottom);
    g.drawLine(left, top, left, h - bottom);
    for (long b = 4; b <= (64L << 20); b *= 16) {
      int x = left + (int) ((Math.log10(b) - minLog) / (maxLog - minLog) * (w - left - right));
      g.drawLine(x, h - bottom, x, h - bottom + 4);
      g.drawString(b >= (1 << 20) ? (b >> 20) + "M" : b >= 1024 ? (b >> 10) + "K" : b + "", x - 10, h - bottom + 18);
    }
    for (int i = 0; i <= 4; i++) {
      double v = maxBus * i / 4;
      int y = h - bottom - (int) (v / maxBus * (h - top - bottom));
      g.drawString(String.format(Locale.ROOT, "%.2f", v), 30, y + 4);
      g.setColor(new Color(0xdddddd));
      g.drawLine(left + 1, y, w - right, y);
      g.setColor(Color.BLACK);
    }
    g.drawString("bytes", (w - right + left) / 2, h - 15);
    int legendY = top + 10;
    for (Series s : series) {
      g.setColor(s.color);
      float[] pattern = s.dash == 0 ? null : new float[] {6f, 4f};
      g.setStroke(new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, pattern, 0f));
      int px = -1;
      int py = -1;
      for (Row r : s.rows.values()) {
        int x = left + (int) ((Math.log10(r.bytes) - minLog) / (maxLog - minLog) * (w - left - right));
        int y = h - bottom - (int) (r.busbw / maxBus * (h - top - bottom));
        if (px >= 0) {
          g.drawLine(px, py, x, y);
        }
        g.fillOval(x - 3, y - 3, 6, 6);
        px = x;
        py = y;
      }
      g.drawLine(w - right + 15, legendY, w - right + 45, legendY);
      g.setColor(Color.BLACK);
      g.drawString(s.name, w - right + 52, legendY + 4);
      legendY += 20;
    }
    g.dispose();
    ImageIO.write(img, "png", png.toFile());
  }
}
