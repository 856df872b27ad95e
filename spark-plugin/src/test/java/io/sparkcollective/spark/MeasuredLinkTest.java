package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.algorithm.AllReduceCostModel;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.engine.EngineCommunicator;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Five executor JVMs of one task each, shared memory off: a group past the four executors AUTO's table was measured
 * on, with a network between them and no link configured, measures its link in its tasks before the first
 * all-reduce (algorithm.measureLink), every rank agrees on it, the sums are right, and the next barrier stage on the
 * same executors takes the same link.
 */
@Timeout(300)
class MeasuredLinkTest {
  private static final int TASKS = 5;
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() throws Exception {
    sc = new JavaSparkContext(SparkTests.withPlugin("local-cluster[5,1,512]", "measured-link")
        .set("spark.executor.memory", "512m")
        .set("spark.collective.transport.sharedMemoryBytes", "0"));
    SparkTests.awaitExecutors(sc, TASKS);
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  /** Each rank's sum and the link its group measured, as {rate in bytes/s, latency in s, CPU per message in s}. */
  private static List<float[]> stage(long seed, int length) {
    return Barrier.mapPartitions(SparkTests.partitions(sc, TASKS), it -> {
      Communicator comm = Collective.communicator();
      float[] g = SparkTests.seededGradient(seed, comm.rank(), length);
      comm.allReduce(g, ReduceOp.SUM);
      AllReduceCostModel link = ((EngineCommunicator) comm).measuredLink();
      float[] figures = link == null ? new float[0] : new float[] {(float) link.linkBytesPerSecond(),
          (float) link.latencySeconds(), (float) link.overheadSeconds()};
      return java.util.Arrays.asList(g, figures).iterator();
    }).collect();
  }

  @Test
  void shouldMeasureTheLinkInTheTasksAndAgreeOnItAcrossStages() {
    int length = 100_003;
    List<float[]> links = new ArrayList<>();
    for (long seed : new long[] {5, 6}) {
      List<float[]> out = stage(seed, length);
      float[] expected = SparkTests.seededSum(seed, TASKS, length);
      assertEquals(2 * TASKS, out.size());
      for (int r = 0; r < TASKS; r++) {
        assertArrayEquals(expected, out.get(2 * r), "stage of seed " + seed + ", rank " + r);
        float[] link = out.get(2 * r + 1);
        assertEquals(3, link.length, "rank " + r + " of the stage of seed " + seed + " measured no link");
        assertTrue(link[0] > 12.5e6 && link[1] > 0 && link[2] > 0, "rank " + r + ": " + java.util.Arrays.toString(
            link));
        assertArrayEquals(out.get(1), link, "rank " + r + " and rank 0 of the stage of seed " + seed);
        links.add(link);
      }
    }
    // The second stage's executors all measured in the first: it takes their figures, so the same link.
    assertArrayEquals(links.get(0), links.get(TASKS), "the second stage's link against the first's");
  }
}
