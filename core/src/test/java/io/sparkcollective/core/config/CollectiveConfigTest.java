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
    Matcher m = Pattern.compile("(?m)^\\s*#?\\s*spark\\.collective\\.(\\S+)\\s+(\\S+)\\s*$")
        .matcher(Files.readString(sample));
    while (m.find()) {
      listed.put(m.group(1), m.group(2).equals("\"\"") ? "" : m.group(2));
    }
    assertEquals(CollectiveConfig.defaultValues(), listed, "conf/spark-defaults.conf.example vs CollectiveConfig");
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
