package io.sparkcollective.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.sparkcollective.core.api.Algorithm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class CollectiveConfigTest {

  @Test
  void shouldListExactlyTheConfigKeysWithTheirDefaultsInTheSampleSparkConf() throws IOException {
    Path sample = Paths.get("..", "conf", "spark-defaults.conf.example");
    Map<String, String> listed = new LinkedHashMap<>();
    String text = Files.readString(sample);
    Matcher set = Pattern.compile("(?m)^spark\\.collective\\.(\\S+)\\s+(\\S+)\\s*$").matcher(text);
    while (set.find()) {
      listed.put(set.group(1), set.group(2));
    }
    // Keys whose default is empty are listed commented out: a value of "" would reach Spark as two quotes.
    Matcher unset = Pattern.compile("(?m)^#\\s*spark\\.collective\\.(\\S+)\\s*$").matcher(text);
    while (unset.find()) {
      listed.put(unset.group(1), "");
    }
    java.util.Map<String, String> expected = new java.util.TreeMap<>(CollectiveConfig.defaultValues());
    assertEquals(expected, new java.util.TreeMap<>(listed), "conf/spark-defaults.conf.example vs CollectiveConfig");
    assertFalse(text.contains("\"\""), "no key may be given as \"\": Spark's properties loader keeps the quotes");
  }

  @Test
  void shouldDocumentEveryKeyAndApplyOverrides() {
    CollectiveConfig.documentation().forEach((k, doc) -> assertFalse(doc.isBlank(), k));
    CollectiveConfig c = CollectiveConfig.from(Map.of(
        CollectiveConfig.ALGORITHM, "ring",
        CollectiveConfig.SEGMENT_BYTES, "65536",
        CollectiveConfig.OPERATION_TIMEOUT_MS, "1500"));
    assertEquals(Algorithm.RING, c.algorithm());
    assertEquals(65536, c.segmentBytes());
    assertEquals(1500, c.operationTimeoutMs());
    assertEquals(Long.parseLong(CollectiveConfig.defaultValues().get(CollectiveConfig.RING_MIN_BYTES)),
        c.ringMinBytes());
  }
}
