package io.sparkcollective.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a newcomer runs, run as they would (after {@code package}): the distribution-free spark-submit with the
 * plugin jar passed by {@code --jars}, and the jshell notebook loop. Both start real local-cluster executors.
 */
@Timeout(600)
class ExampleScriptsIT {
  private static final Path REPO = Paths.get(System.getProperty("repo.dir", "..")).toAbsolutePath().normalize();

  /** Runs a command from the repository root; returns its combined output, failing on a non-zero exit. */
  private static String run(Path log, long timeoutSeconds, String... command) throws Exception {
    Process p = new ProcessBuilder(command).directory(REPO.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      throw new AssertionError(Arrays.toString(command) + " did not finish in " + timeoutSeconds + " s:\n"
          + Files.readString(log));
    }
    String out = Files.readString(log);
    assertEquals(0, p.exitValue(), Arrays.toString(command) + " failed:\n" + out);
    return out;
  }

  private static boolean isPng(Path file) throws IOException {
    byte[] head = Arrays.copyOf(Files.readAllBytes(file), 8);
    return head[1] == 'P' && head[2] == 'N' && head[3] == 'G';
  }

  @Test
  void trainingJobRunsThroughSparkSubmitWithThePluginJarAndTheSampleConfig(@TempDir Path dir) throws Exception {
    Path pluginJar = jar("spark-plugin", "spark-collective-spark");
    // The plain examples jar: only the examples' classes, so the plugin and the engine come from --jars.
    Path appJar = jar("examples", "spark-collective-examples");
    Path out = dir.resolve("training");
    // With the sample configuration as it ships, loaded by spark-submit's own --properties-file.
    String log = run(dir.resolve("job.log"), 420, "bash", "examples/spark-submit.sh",
        "--properties-file", "conf/spark-defaults.conf.example",
        "--master", "local-cluster[2,2,1024]", "--jars", pluginJar.toString(),
        "--class", TrainingJob.class.getName(), appJar.toString(),
        "--rows", "4000", "--features", "16", "--classes", "3", "--iterations", "12", "--per-stage", "6",
        "--compare", "--gather-iterations", "2", "--out", out.toString());
    assertTrue(log.contains("2 executor JVM(s) ready"), log);
    for (String sync : List.of("allReduce", "treeAggregate", "allGather")) {
      assertTrue(log.contains("| " + sync + " |"), "summary row of " + sync + ":\n" + log);
    }
    // The same optimizer on the same data: allReduce and treeAggregate end at the same objective.
    List<Double> finals = new ArrayList<>();
    Matcher m = Pattern.compile("\\| (allReduce|treeAggregate) \\| \\d+ \\| [\\d.]+ \\| [\\d.]+ \\| ([\\d.]+) \\|")
        .matcher(log);
    while (m.find()) {
      finals.add(Double.parseDouble(m.group(2)));
    }
    assertEquals(2, finals.size(), log);
    assertEquals(finals.get(0), finals.get(1), 1e-5, log);
    assertTrue(isPng(out.resolve("loss.png")) && isPng(out.resolve("time-per-iteration.png")), "charts written");
    assertTrue(Files.readString(out.resolve("summary.md")).contains("less time per iteration"), "summary written");
  }

  @Test
  void theReadmesScalaSnippetRunsCompiled(@TempDir Path dir) throws Exception {
    String log = run(dir.resolve("scala.log"), 300, "bash", "examples/spark-submit.sh",
        "--master", "local-cluster[2,1,1024]", "--jars", jar("spark-plugin", "spark-collective-spark").toString(),
        "--class", "io.sparkcollective.examples.ScalaQuickStart",
        jar("examples", "spark-collective-examples").toString());
    assertTrue(log.contains("scala quick start: 2 tasks, each holds the sum of all rows: true"), log);
  }

  /** The plain jar of {@code module}, named {@code artifact-<version>.jar}. */
  private static Path jar(String module, String artifact) throws IOException {
    try (java.util.stream.Stream<Path> s = Files.list(REPO.resolve(module + "/target"))) {
      return s.filter(f -> f.getFileName().toString().matches(artifact + "-[^-]+(-SNAPSHOT)?\\.jar")).findFirst()
          .orElseThrow(() -> new AssertionError("no " + artifact + " jar in " + module + "/target"));
    }
  }

  @Test
  void notebookLoopRunsInJshell(@TempDir Path dir) throws Exception {
    String log = run(dir.resolve("notebook.log"), 300, "bash", "examples/notebook/run.sh");
    Matcher m = Pattern.compile("epoch (\\d)  step +(\\d+)  objective ([\\d.]+)").matcher(log);
    List<Double> objectives = new ArrayList<>();
    while (m.find()) {
      objectives.add(Double.parseDouble(m.group(3)));
    }
    assertEquals(4, objectives.size(), "four epochs, each a barrier stage:\n" + log);
    assertTrue(objectives.get(3) < objectives.get(0), "training lowers the objective: " + objectives);
    assertTrue(log.contains("notebook done"), log);
    assertTrue(!log.contains("Exception"), "no snippet failed:\n" + log);
  }
}
