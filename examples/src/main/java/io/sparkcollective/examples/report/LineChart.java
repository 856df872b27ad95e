package io.sparkcollective.examples.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Rectangle;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.util.function.DoubleFunction;
import org.apache.batik.svggen.SVGGraphics2D;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * A line chart of named series, drawn by JFreeChart and written as PNG and SVG: linear or logarithmic axes;
 * a {@link #bytesX() byte axis} has ticks at powers of two labelled 4 B, 64 KiB, 1 MiB; a
 * {@link #countX() count axis} at powers of ten labelled 1K, 1M.
 */
public final class LineChart {
  private static final int WIDTH = 1000;
  private static final int HEIGHT = 600;

  private final String title;
  private final String xLabel;
  private final String yLabel;
  private final XYSeriesCollection data = new XYSeriesCollection();
  private final java.util.List<Boolean> dashed = new java.util.ArrayList<>();
  private boolean logY;
  /** Ticks of a logarithmic x axis: base and label, or null for a linear axis of whole numbers. */
  private double xBase;
  private DoubleFunction<String> xLabels;

  public LineChart(String title, String xLabel, String yLabel) {
    System.setProperty("java.awt.headless", "true");
    this.title = title;
    this.xLabel = xLabel;
    this.yLabel = yLabel;
  }

  /** The x axis is logarithmic in sizes of bytes: ticks every factor of 4, labelled in B, KiB, MiB, GiB. */
  public LineChart bytesX() {
    return logX(2, LineChart::bytes);
  }

  /** The x axis is logarithmic in counts: ticks every factor of 10, labelled 1, 10, 100, 1K, 10K, 1M. */
  public LineChart countX() {
    return logX(10, LineChart::count);
  }

  private LineChart logX(double base, DoubleFunction<String> labels) {
    this.xBase = base;
    this.xLabels = labels;
    return this;
  }

  /** The y axis is logarithmic (base 10). */
  public LineChart logY() {
    this.logY = true;
    return this;
  }

  public LineChart add(String name, double[] x, double[] y) {
    return add(name, x, y, false);
  }

  public LineChart add(String name, double[] x, double[] y, boolean dashedLine) {
    if (x.length != y.length) {
      throw new IllegalArgumentException("series " + name + " has " + x.length + " x and " + y.length + " y values");
    }
    XYSeries s = new XYSeries(name, false, true);
    for (int i = 0; i < x.length; i++) {
      if (!Double.isNaN(y[i]) && (!logY || y[i] > 0)) {
        s.add(x[i], y[i]);
      }
    }
    data.addSeries(s);
    dashed.add(dashedLine);
    return this;
  }

  /** Writes the chart to {@code png}, and as SVG next to it (same name, {@code .svg}). */
  public void write(Path png) throws IOException {
    JFreeChart chart = chart();
    ChartUtils.saveChartAsPNG(png.toFile(), chart, WIDTH, HEIGHT);
    String name = png.getFileName().toString();
    Path svg = png.resolveSibling(name.replaceFirst("\\.png$", "") + ".svg");
    SVGGraphics2D g;
    try {
      g = new SVGGraphics2D(javax.xml.parsers.DocumentBuilderFactory.newInstance().newDocumentBuilder()
          .getDOMImplementation().createDocument("http://www.w3.org/2000/svg", "svg", null));
    } catch (javax.xml.parsers.ParserConfigurationException e) {
      throw new IOException("no XML document builder for the SVG", e);
    }
    g.setSVGCanvasSize(new java.awt.Dimension(WIDTH, HEIGHT));
    chart.draw(g, new Rectangle(WIDTH, HEIGHT));
    try (Writer w = Files.newBufferedWriter(svg, StandardCharsets.UTF_8)) {
      g.stream(w, true);
    }
  }

  /** The chart as drawn (package-private for tests). */
  JFreeChart chart() {
    JFreeChart chart = ChartFactory.createXYLineChart(title, xLabel, yLabel, data, PlotOrientation.VERTICAL,
        true, false, false);
    chart.setBackgroundPaint(Color.WHITE);
    XYPlot plot = chart.getXYPlot();
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(new Color(0xdddddd));
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, true);
    for (int i = 0; i < dashed.size(); i++) {
      r.setSeriesStroke(i, dashed.get(i) ? new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f,
          new float[] {6f, 4f}, 0f) : new BasicStroke(2f));
    }
    plot.setRenderer(r);
    if (xLabels != null) {
      LogAxis x = new LogAxis(xLabel);
      x.setBase(xBase);
      // Ticks are counted in powers of the base: 2 for bytes (every factor of 4), 1 for counts.
      x.setTickUnit(new NumberTickUnit(xBase == 2 ? 2 : 1));
      x.setMinorTickMarksVisible(false);
      x.setNumberFormatOverride(format(xLabels));
      plot.setDomainAxis(x);
    } else {
      NumberAxis x = (NumberAxis) plot.getDomainAxis();
      x.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
      x.setAutoRangeIncludesZero(false);
    }
    if (logY) {
      LogAxis y = new LogAxis(yLabel);
      y.setBase(10);
      y.setTickUnit(new NumberTickUnit(1));
      y.setMinorTickMarksVisible(true);
      y.setNumberFormatOverride(format(LineChart::plain));
      plot.setRangeAxis(y);
    } else {
      ValueAxis y = plot.getRangeAxis();
      ((NumberAxis) y).setAutoRangeIncludesZero(true);
    }
    return chart;
  }

  /** A size in bytes as 4 B, 64 KiB, 1 MiB, 2 GiB. */
  public static String bytes(double v) {
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return plain(v) + " " + units[u];
  }

  /** A count as 1, 10, 100, 1K, 10K, 1M, 1G. */
  public static String count(double v) {
    String[] units = {"", "K", "M", "G"};
    int u = 0;
    while (v >= 1000 && u < units.length - 1) {
      v /= 1000;
      u++;
    }
    return plain(v) + units[u];
  }

  /** A number without needless digits: 4, 0.5, 2.25, 1.5e-05 stays readable. */
  static String plain(double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return String.valueOf((long) v);
    }
    java.math.BigDecimal d = new java.math.BigDecimal(v).round(new java.math.MathContext(3));
    return d.stripTrailingZeros().toPlainString();
  }

  /** A NumberFormat that writes tick values with {@code f} (JFreeChart asks a NumberFormat for tick labels). */
  private static NumberFormat format(DoubleFunction<String> f) {
    return new NumberFormat() {
      @Override
      public StringBuffer format(double number, StringBuffer to, FieldPosition pos) {
        return to.append(f.apply(number));
      }

      @Override
      public StringBuffer format(long number, StringBuffer to, FieldPosition pos) {
        return to.append(f.apply(number));
      }

      @Override
      public Number parse(String source, ParsePosition pos) {
        throw new UnsupportedOperationException("tick labels are only written");
      }
    };
  }
}
