package io.sparkcollective.core.algorithm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.config.CollectiveConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * AUTO told the link rate: DIRECT only while its (N-1) copies of the vector on every link cost less than the
 * other algorithm's 2(N-1)/N plus its extra steps, as measured on 4 hosts at 1 Gbit/s (16 KiB: DIRECT 416 us,
 * HALVING_DOUBLING 236 us) and at 10 Gbit/s and on loopback (DIRECT still ahead there).
 */
@Timeout(30)
class AlgorithmSelectorTest {
  private static AlgorithmSelector selector() {
    return new AlgorithmSelector(16384, 8, 4 << 20, Algorithm.AUTO);
  }

  private static AlgorithmSelector onLinks(long linkMbps) {
    return new AlgorithmSelector(16384, 8, 4 << 20, Algorithm.AUTO, linkMbps, 50);
  }

  private static Algorithm auto(AlgorithmSelector s, long bytes, Placement p) {
    return s.select(Algorithm.AUTO, bytes, p).algorithm();
  }

  @Test
  void shouldTakeRingFromSmallerMessagesOnSlowerLinks() {
    // 4 MiB stands for 10 Gbit/s; 1 Gbit/s scales it to 419430 bytes.
    assertEquals(4 << 20, selector().ringMinBytes());
    assertEquals(4 << 20, onLinks(10_000).ringMinBytes());
    assertEquals(4 << 20, onLinks(25_000).ringMinBytes(), "faster links keep the configured size");
    assertEquals(419_430, onLinks(1000).ringMinBytes());
    assertEquals(Algorithm.HALVING_DOUBLING, auto(selector(), 1 << 20, Placement.flat(4)));
    assertEquals(Algorithm.HALVING_DOUBLING, auto(onLinks(10_000), 1 << 20, Placement.flat(4)));
    assertEquals(Algorithm.RING, auto(onLinks(1000), 1 << 20, Placement.flat(4)), "a 4 MB gradient at 1 Gbit/s");
    assertEquals(Algorithm.HALVING_DOUBLING, auto(onLinks(1000), 262_144, Placement.flat(4)));
  }

  @Test
  void shouldStopDirectWhereItsExtraCopiesCostMoreLinkTimeThanTheOtherAlgorithmsSteps() {
    AlgorithmSelector unknown = selector();
    AlgorithmSelector gigabit = onLinks(1000);
    AlgorithmSelector tenGigabit = onLinks(10_000);
    assertEquals(Algorithm.DIRECT, auto(unknown, 16384, Placement.flat(4)), "no link rate: the configured size");
    // 4 ranks, 1 Gbit/s: 3 steps of 50 us buy 1.5 copies of 125 MB/s: DIRECT up to 12500 bytes.
    assertEquals(12_500, gigabit.directMaxBytes(4));
    assertEquals(Algorithm.HALVING_DOUBLING, auto(gigabit, 16384, Placement.flat(4)));
    assertEquals(Algorithm.DIRECT, auto(gigabit, 12_500, Placement.flat(4)));
    assertEquals(Algorithm.DIRECT, auto(tenGigabit, 16384, Placement.flat(4)), "10 Gbit/s: 125000, above 16 KiB");
    // Two ranks: DIRECT moves no more bytes than the others.
    assertEquals(Algorithm.DIRECT, auto(gigabit, 16384, Placement.flat(2)));
    // Three ranks against the ring's 4 steps: 3 x 50 us over 2/3 of a copy, 28125 bytes (above the configured
    // 16 KiB, which stays the limit).
    assertEquals(28_125, new AlgorithmSelector(1 << 20, 8, 4 << 20, Algorithm.AUTO, 1000, 50).directMaxBytes(3));
    assertEquals(16_384, gigabit.directMaxBytes(3));
    assertEquals(Algorithm.DIRECT, auto(gigabit, 16384, Placement.flat(3)));
    // Across hosts inside HIERARCHICAL: 4 hosts of 2 ranks, 32 KiB = 16 KiB per rank across.
    Placement fourByTwo = Placement.of(new int[] {0, 0, 1, 1, 2, 2, 3, 3});
    assertEquals(Algorithm.HALVING_DOUBLING, gigabit.select(Algorithm.AUTO, 32768, fourByTwo).inner());
    assertEquals(Algorithm.DIRECT, unknown.select(Algorithm.AUTO, 32768, fourByTwo).inner());
  }

  @Test
  void shouldTakeTheLinkRateFromTheConfiguration() {
    CollectiveConfig c = CollectiveConfig.from(Map.of(CollectiveConfig.LINK_MBPS, "1000",
        CollectiveConfig.STEP_MICROS, "40"));
    assertEquals(1000, c.linkMbps());
    assertEquals(40, c.stepMicros());
    assertEquals(0, CollectiveConfig.from(Map.of()).linkMbps(), "not known by default");
  }
}
