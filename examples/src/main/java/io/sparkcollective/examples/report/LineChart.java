package io.sparkcollective.examples.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.DoubleFunction;
import javax.imageio.ImageIO;

/** A small PNG line chart (headless AWT, no extra library): several named series, linear or log axes. */
public final class LineChart {
  private static final Color[] PALETTE = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c),
      new Color(0xff7f0e), new Color(0x9467bd), new Color(0x8c564b), new Color(0xe377c2), new Color(0x7f7f7f)};

  private final String title;
  private final String xLabel;
  private final String yLabel;
  private boolean logX;
  private boolean logY;
  private DoubleFunction<String> xTicks = v -> format(v);
  private final List<Series> series = new ArrayList<>();

  private static final class Series {
    final String name;
    final double[] x;
    final double[] y;
    final boolean dashed;

    Series(String name, double[] x, double[] y, boolean dashed) {
      this.name = name;
      this.x = x;
      this.y = y;
      this.dashed = dashed;
    }
  }

  public LineChart(String title, String xLabel, String yLabel) {
    System.setProperty("java.awt.headless", "true");
    this.title = title;
    this.xLabel = xLabel;
    this.yLabel = yLabel;
  }

  public LineChart logX() {
    this.logX = true;
    return this;
  }

  public LineChart logY() {
    this.logY = true;
    return this;
  }

  /** How x tick values are written (e.g. byte sizes). */
  public LineChart xTicks(DoubleFunction<String> format) {
    this.xTicks = format;
    return this;
  }

  public LineChart add(String name, double[] x, double[] y) {
    return add(name, x, y, false);
  }

  public LineChart add(String name, double[] x, double[] y, boolean dashed) {
    if (x.length != y.length) {
      throw new IllegalArgumentException("series " + name + " has " + x.length + " x and " + y.length + " y values");
    }
    series.add(new Series(name, x.clone(), y.clone(), dashed));
    return this;
  }

  private static String format(double v) {
    double a = Math.abs(v);
    if (a != 0 && (a >= 1e5 || a < 1e-2)) {
      return String.format(Locale.ROOT, "%.1e", v);
    }
    return a >= 100 || v == Math.rint(v) ? String.format(Locale.ROOT, "%.0f", v)
        : String.format(Locale.ROOT, "%.3g", v);
  }

  private double tx(double v, boolean log) {
    return log ? Math.log10(v) : v;
  }

  /** Writes the chart; points that cannot be drawn (NaN, or not positive on a log axis) are skipped. */
  public void write(Path png) throws IOException {
    int w = 960;
    int h = 540;
    int left = 90;
    int right = 300;
    int top = 45;
    int bottom = 60;
    double[] xr = {Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY};
    double[] yr = {Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY};
    for (Series s : series) {
      for (int i = 0; i < s.x.length; i++) {
        if (drawable(s.x[i], logX) && drawable(s.y[i], logY)) {
          xr[0] = Math.min(xr[0], tx(s.x[i], logX));
          xr[1] = Math.max(xr[1], tx(s.x[i], logX));
          yr[0] = Math.min(yr[0], tx(s.y[i], logY));
          yr[1] = Math.max(yr[1], tx(s.y[i], logY));
        }
      }
    }
    if (xr[0] > xr[1]) {
      xr = new double[] {0, 1};
      yr = new double[] {0, 1};
    }
    if (!logY && yr[0] > 0) {
      yr[0] = 0;
    }
    if (xr[1] - xr[0] == 0) {
      xr[1] = xr[0] + 1;
    }
    if (yr[1] - yr[0] == 0) {
      yr[1] = yr[0] + 1;
    }
    yr[1] += (yr[1] - yr[0]) * 0.05;
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, w, h);
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
    g.drawString(title, left, 25);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    int plotW = w - left - right;
    int plotH = h - top - bottom;
    for (double v : ticks(xr, logX)) {
      int x = left + (int) Math.round((v - xr[0]) / (xr[1] - xr[0]) * plotW);
      g.setColor(new Color(0xe0e0e0));
      g.drawLine(x, top, x, h - bottom);
      g.setColor(Color.BLACK);
      String label = xTicks.apply(logX ? Math.pow(10, v) : v);
      g.drawString(label, x - g.getFontMetrics().stringWidth(label) / 2, h - bottom + 18);
    }
    for (double v : ticks(yr, logY)) {
      int y = h - bottom - (int) Math.round((v - yr[0]) / (yr[1] - yr[0]) * plotH);
      g.setColor(new Color(0xe0e0e0));
      g.drawLine(left, y, w - right, y);
      g.setColor(Color.BLACK);
      String label = format(logY ? Math.pow(10, v) : v);
      g.drawString(label, left - 8 - g.getFontMetrics().stringWidth(label), y + 4);
    }
    g.drawRect(left, top, plotW, plotH);
    g.drawString(xLabel + (logX ? " (log)" : ""), left + plotW / 2 - 40, h - 18);
    Graphics2D rotated = (Graphics2D) g.create();
    rotated.rotate(-Math.PI / 2);
    rotated.drawString(yLabel + (logY ? " (log)" : ""), -(top + plotH / 2 + 60), 20);
    rotated.dispose();
    int legendY = top + 12;
    for (int si = 0; si < series.size(); si++) {
      Series s = series.get(si);
      g.setColor(PALETTE[si % PALETTE.length]);
      float[] pattern = s.dashed ? new float[] {6f, 4f} : null;
      g.setStroke(new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, pattern, 0f));
      int px = Integer.MIN_VALUE;
      int py = 0;
      for (int i = 0; i < s.x.length; i++) {
        if (!drawable(s.x[i], logX) || !drawable(s.y[i], logY)) {
          px = Integer.MIN_VALUE;
          continue;
        }
        int x = left + (int) Math.round((tx(s.x[i], logX) - xr[0]) / (xr[1] - xr[0]) * plotW);
        int y = h - bottom - (int) Math.round((tx(s.y[i], logY) - yr[0]) / (yr[1] - yr[0]) * plotH);
        if (px != Integer.MIN_VALUE) {
          g.drawLine(px, py, x, y);
        }
        if (s.x.length <= 40) {
          g.fillOval(x - 3, y - 3, 6, 6);
        }
        px = x;
        py = y;
      }
      g.drawLine(w - right + 15, legendY, w - right + 45, legendY);
      g.setColor(Color.BLACK);
      g.drawString(s.name, w - right + 52, legendY + 4);
      legendY += 20;
    }
    g.dispose();
    Path parent = png.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    ImageIO.write(img, "png", png.toFile());
  }

  /** Tick positions (in axis units): powers of ten on a log axis spanning two or more, else six even steps. */
  private static double[] ticks(double[] range, boolean log) {
    if (log) {
      int from = (int) Math.ceil(range[0] - 1e-9);
      int to = (int) Math.floor(range[1] + 1e-9);
      if (to - from >= 1 && to - from <= 10) {
        double[] t = new double[to - from + 1];
        for (int i = 0; i < t.length; i++) {
          t[i] = from + i;
        }
        return t;
      }
    }
    double[] t = new double[6];
    for (int i = 0; i < t.length; i++) {
      t[i] = range[0] + (range[1] - range[0]) * i / 5;
    }
    return t;
  }

  private static boolean drawable(double v, boolean log) {
    return Double.isFinite(v) && (!log || v > 0);
  }
}
