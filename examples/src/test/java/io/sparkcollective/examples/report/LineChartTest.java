package io.sparkcollective.examples.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.jfree.chart.axis.LogAxis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class LineChartTest {
  @Test
  void aByteAxisIsLabelledInPowersOfTwoInPngAndSvg(@TempDir Path dir) throws Exception {
    double[] sizes = {4, 65536, 1 << 20, 16 << 20, 64 << 20};
    new LineChart("busbw", "bytes", "GB/s").bytesX()
        .add("ours", sizes, new double[] {0.001, 0.5, 1.2, 1.0, 1.1})
        .add("peer", sizes, new double[] {0.002, 0.4, 1.0, 0.9, 0.8}, true)
        .write(dir.resolve("chart.png"));
    BufferedImage png = ImageIO.read(dir.resolve("chart.png").toFile());
    assertEquals(1000, png.getWidth());
    assertEquals(600, png.getHeight());
    String svg = Files.readString(dir.resolve("chart.svg"));
    assertTrue(svg.contains("<svg") && svg.contains(">ours<") && svg.contains(">peer<") && svg.contains(">busbw<"),
        "the SVG has the title and both series in the legend");
    // The tick labels of the byte axis (JFreeChart draws them as shapes in the SVG): powers of two, every
    // factor of 4, written in binary units.
    LogAxis x = (LogAxis) new LineChart("busbw", "bytes", "GB/s").bytesX().add("ours", sizes, sizes).chart()
        .getXYPlot().getDomainAxis();
    assertEquals(2, x.getBase());
    assertEquals(2, x.getTickUnit().getSize(), "a tick every 2^2");
    java.text.NumberFormat labels = x.getNumberFormatOverride();
    assertEquals("4 B", labels.format(4.0));
    assertEquals("64 KiB", labels.format(65536.0));
    assertEquals("1 MiB", labels.format((double) (1 << 20)));
    assertEquals("64 MiB", labels.format((double) (64 << 20)));
  }

  @Test
  void labelsAreWrittenWithoutNeedlessDigits() {
    assertEquals("4 B", LineChart.bytes(4));
    assertEquals("64 KiB", LineChart.bytes(65536));
    assertEquals("1 MiB", LineChart.bytes(1 << 20));
    assertEquals("1.5 GiB", LineChart.bytes(1.5 * (1 << 30)));
    assertEquals("10K", LineChart.count(10_000));
    assertEquals("1M", LineChart.count(1_000_000));
    assertEquals("0.5", LineChart.plain(0.5));
    assertEquals("3.97", LineChart.plain(3.97));
  }
}
