package io.sparkcollective.core.algorithm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.config.CollectiveConfig;
import java.util.EnumSet;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * AUTO with the link unknown follows the configured table up to four processes and an assumed link beyond;
 * told the link, its cost model, which picks what the test bed measured (4 hosts on 1 Gbit/s links). How it
 * compares with the simulated best over a grid is {@code simulation.SelectorAgainstSimulationTest}.
 */
@Timeout(30)
class AlgorithmSelectorTest {
  private static final int SEGMENT = 262_144;

  private static AlgorithmSelector table() {
    return new AlgorithmSelector(16384, 8, 4 << 20, Algorithm.AUTO);
  }

  private static AlgorithmSelector onLinks(long linkMbps, long latencyMicros) {
    return new AlgorithmSelector(16384, 8, 4 << 20, Algorithm.AUTO, linkMbps, latencyMicros, SEGMENT);
  }

  private static Algorithm auto(AlgorithmSelector s, long bytes, Placement p) {
    return s.select(Algorithm.AUTO, bytes, p).algorithm();
  }

  @Test
  void shouldFollowTheConfiguredTableWithTheLinkUnknown() {
    AlgorithmSelector s = table();
    // Small messages over sockets: one message per step; two ranks send one message each way with any algorithm.
    assertEquals(Algorithm.RECURSIVE_DOUBLING, auto(s, 16384, Placement.flat(4)));
    assertEquals(Algorithm.RECURSIVE_DOUBLING, auto(s, 4, Placement.flat(3)));
    assertEquals(Algorithm.DIRECT, auto(s, 16384, Placement.flat(2)));
    assertEquals(Algorithm.HALVING_DOUBLING, auto(s, 16385, Placement.flat(4)));
    assertEquals(Algorithm.RECURSIVE_DOUBLING, auto(s, 4, Placement.flat(16)), "16 ranks: over directMaxRanks");
    assertEquals(Algorithm.RING, auto(s, (4 << 20) + 1, Placement.flat(4)));
    assertEquals(Algorithm.RING, auto(s, 65536, Placement.flat(3)), "not a power of two: RING above DIRECT");
    Placement fourByTwo = Placement.of(new int[] {0, 0, 1, 1, 2, 2, 3, 3});
    assertEquals(AlgorithmChoice.of(Algorithm.HIERARCHICAL, Algorithm.RECURSIVE_DOUBLING), s.select(Algorithm.AUTO,
        32768, fourByTwo), "16 KiB per rank across hosts");
  }

  @Test
  void shouldSendSmallMessagesToAllAtOnceWhereEveryPeerIsReachedThroughMemory() {
    AlgorithmSelector memory = new AlgorithmSelector(16384, 8, 4 << 20, Algorithm.AUTO, 0, 0, SEGMENT, true);
    assertEquals(Algorithm.DIRECT, auto(memory, 16384, Placement.flat(4)));
    assertEquals(Algorithm.DIRECT, auto(memory, 4, Placement.flat(8)));
    assertEquals(Algorithm.RECURSIVE_DOUBLING, auto(memory, 4, Placement.flat(9)), "over directMaxRanks");
    assertEquals(Algorithm.HALVING_DOUBLING, auto(memory, 16385, Placement.flat(4)));
    assertEquals(AlgorithmChoice.of(Algorithm.HIERARCHICAL, Algorithm.DIRECT), memory.select(Algorithm.AUTO, 32768,
        Placement.of(new int[] {0, 0, 1, 1, 2, 2, 3, 3})), "16 KiB per rank across the host's processes");
  }

  /**
   * The bed of README "Several hosts" (1 Gbit/s, no delay beyond the CPU: 13 us per message on each side, as
   * SimulationValidation fits it), each algorithm forced, us: 4 hosts, 4 B RECURSIVE_DOUBLING 103, HALVING_DOUBLING
   * 151, DIRECT 158; 1 KiB 116, 148, 202; 16 KiB HALVING_DOUBLING 237, RECURSIVE_DOUBLING 291, RING 401, DIRECT 486;
   * 1 MiB RING 13.2 ms, HALVING_DOUBLING 16.3; 3 hosts, 4 B DIRECT 54.7, RECURSIVE_DOUBLING 57.5; 16 KiB RING 199,
   * HALVING_DOUBLING 278, DIRECT 278; 1 MiB RING 11.7 ms, DIRECT 18.2.
   */
  @Test
  void shouldPickWhatTheTestBedMeasuredWhenToldTheLink() {
    AlgorithmSelector bed = AlgorithmSelector.of(CollectiveConfig.from(Map.of(CollectiveConfig.LINK_MBPS, "1000",
        CollectiveConfig.STEP_MICROS, "1", CollectiveConfig.MESSAGE_MICROS, "13")), false, false, SEGMENT);
    assertEquals(Algorithm.RECURSIVE_DOUBLING, auto(bed, 4, Placement.flat(4)));
    assertEquals(Algorithm.RECURSIVE_DOUBLING, auto(bed, 1024, Placement.flat(4)));
    assertEquals(Algorithm.HALVING_DOUBLING, auto(bed, 16384, Placement.flat(4)));
    // 1 MiB and 4 MiB at 4 hosts: a tie in the model, RING preferred.
    assertEquals(Algorithm.RING, auto(bed, 1 << 20, Placement.flat(4)));
    assertEquals(Algorithm.RING, auto(bed, 4 << 20, Placement.flat(4)));
    assertEquals(Algorithm.DIRECT, auto(bed, 4, Placement.flat(3)));
    assertEquals(Algorithm.RING, auto(bed, 16384, Placement.flat(3)));
    assertEquals(Algorithm.RING, auto(bed, 1 << 20, Placement.flat(3)));
    // Told a cheap message (the default 1 us), DIRECT's three at once look cheaper than two steps.
    assertEquals(Algorithm.DIRECT, auto(onLinks(1000, 10), 4, Placement.flat(4)));
  }

  @Test
  void shouldKeepToTheTableForAGroupInsideOneProcessWhenToldTheLink() {
    AlgorithmSelector told = new AlgorithmSelector(16384, 8, 4 << 20, Algorithm.AUTO, 1000, 50, SEGMENT, true);
    Placement oneProcess = Placement.of(new int[] {0, 0, 0, 0});
    // Across four hosts the model takes recursive doubling at 16 KiB; inside one process nothing crosses a link.
    assertEquals(Algorithm.RECURSIVE_DOUBLING, auto(told, 16384, Placement.flat(4)));
    assertEquals(Algorithm.DIRECT, auto(told, 16384, oneProcess));
    assertEquals(Algorithm.HALVING_DOUBLING, auto(told, 1 << 20, oneProcess));
  }

  @Test
  void shouldFollowTheGroupSizeWhenToldTheLink() {
    AlgorithmSelector tenGigabit = onLinks(10_000, 10);
    // Small messages on 16 ranks: one step of 15 messages beats 8 steps.
    assertEquals(Algorithm.DIRECT, auto(tenGigabit, 4, Placement.flat(16)));
    // 256 ranks, 16 MiB: the ring's 510 latencies cost more than halving-doubling's 16 or the two-dimensional
    // ring's 60 (the two within 0.1% of each other in the simulation).
    assertNotEquals(Algorithm.RING, auto(tenGigabit, 16 << 20, Placement.flat(256)));
    // 1 GiB: the latencies no longer count, the rings' streams win.
    assertTrue(EnumSet.of(Algorithm.RING, Algorithm.RING_2D).contains(auto(tenGigabit, 1 << 30, Placement.flat(256))));
    // 1000 ranks, 16 MiB: the two-dimensional ring (40 x 25: 126 latencies, 28.1 ms simulated) against the ring's
    // 1998 (56.1 ms) and halving-doubling's fold (74.3 ms).
    assertEquals(Algorithm.RING_2D, auto(tenGigabit, 16 << 20, Placement.flat(1000)));
    assertEquals(Algorithm.RING, auto(tenGigabit, 16 << 20, Placement.flat(997)), "a prime: no rows");
    // 100 ranks, 64 KiB: the fold costs less than 198 ring latencies.
    assertEquals(Algorithm.HALVING_DOUBLING, auto(tenGigabit, 65536, Placement.flat(100)));
    // Several ranks per host: HIERARCHICAL, whose inner algorithm follows the size.
    Placement eightByFour = Placement.of(blocks(32, 4));
    assertEquals(Algorithm.HIERARCHICAL, auto(tenGigabit, 64 << 20, eightByFour));
  }

  @Test
  void shouldWeighTheTwoDimensionalRingOnHostsOfSeveralRanks() {
    AlgorithmSelector twentyFive = onLinks(25_000, 10);
    // 256 hosts of 4, 16 MiB: rows of 32 cross 8 hosts, columns every hop; simulated 11.8 ms against
    // HIERARCHICAL(RING) 13.1 and HIERARCHICAL(HALVING_DOUBLING) 13.1.
    assertEquals(Algorithm.RING_2D, auto(twentyFive, 16 << 20, Placement.of(blocks(1024, 4))));
    // The same ranks dealt round-robin to the hosts: rows and columns would not be what the model follows.
    int[] interleaved = new int[1024];
    for (int r = 0; r < interleaved.length; r++) {
      interleaved[r] = r % 256;
    }
    assertNotEquals(Algorithm.RING_2D, auto(twentyFive, 16 << 20, Placement.of(interleaved)));
  }

  private static int[] blocks(int ranks, int perNode) {
    int[] nodes = new int[ranks];
    for (int r = 0; r < ranks; r++) {
      nodes[r] = r / perNode;
    }
    return nodes;
  }

  @Test
  void shouldKeepEachChoiceForItsSizeClass() {
    AlgorithmSelector s = onLinks(10_000, 10);
    Placement p = Placement.flat(64);
    assertSame(s.select(Algorithm.AUTO, 1 << 20, p), s.select(Algorithm.AUTO, 1 << 20, p));
    assertEquals(AlgorithmSelector.sizeClass(1 << 20), AlgorithmSelector.sizeClass((1 << 20) + 1000));
    assertEquals(AlgorithmSelector.sizeClass(1 << 20) + 1, AlgorithmSelector.sizeClass(5 << 18));
    assertEquals(AlgorithmSelector.sizeClass(1 << 20) + 4, AlgorithmSelector.sizeClass(2 << 20));
    assertEquals(Algorithm.RING, s.select(Algorithm.RING, 4, p).algorithm(), "a requested algorithm wins");
    AlgorithmSelector forced = new AlgorithmSelector(16384, 8, 4 << 20, Algorithm.DIRECT, 10_000, 10, SEGMENT);
    assertEquals(Algorithm.DIRECT, forced.select(Algorithm.AUTO, 1 << 30, p).algorithm(), "a forced one too");
  }

  /**
   * With the link unknown and measuring off, what ships on one host: the table where it was measured (up to four
   * processes, and groups whose peers are all reached through memory), beyond that the cost model on the assumed
   * 10 Gbit/s link, which picks what it picks when told that link.
   */
  @Test
  void shouldAssumeALinkForGroupsLargerThanTheTableWasMeasuredOn() {
    CollectiveConfig config = CollectiveConfig.defaults();
    AlgorithmSelector shipped = AlgorithmSelector.of(config, false, true, SEGMENT);
    AlgorithmSelector table = new AlgorithmSelector(config.directMaxBytes(), config.directMaxRanks(),
        config.ringMinBytes(), Algorithm.AUTO);
    AlgorithmSelector told = new AlgorithmSelector(config.directMaxBytes(), config.directMaxRanks(),
        config.ringMinBytes(), Algorithm.AUTO, 10_000, 10, SEGMENT);
    long[] sizes = {4, 16384, 65536, 1 << 20, 4 << 20, 64 << 20};
    Placement[] small = {Placement.flat(2), Placement.flat(3), Placement.flat(4),
        Placement.of(new int[] {0, 0, 1, 1, 2, 2, 3, 3}), Placement.of(new int[] {0, 0, 0, 0, 1, 1, 1, 1})};
    Placement[] large = {Placement.flat(5), Placement.flat(64), Placement.flat(1000),
        Placement.of(new int[] {0, 0, 1, 1, 2, 2, 3, 3, 4, 4})};
    for (long b : sizes) {
      for (Placement p : small) {
        assertEquals(table.select(Algorithm.AUTO, b, p), shipped.select(Algorithm.AUTO, b, p),
            b + " bytes on " + p.ranks() + " ranks in " + p.nodeCount() + " processes: the table");
      }
      for (Placement p : large) {
        assertEquals(told.select(Algorithm.AUTO, b, p), shipped.select(Algorithm.AUTO, b, p),
            b + " bytes on " + p.ranks() + " ranks in " + p.nodeCount() + " processes: the assumed link");
      }
    }
    // The table sends 1000 ranks' 64 KiB to the ring (2 x 999 latencies); the model does not.
    assertEquals(Algorithm.RING, table.select(Algorithm.AUTO, 65536, Placement.flat(1000)).algorithm());
    assertNotEquals(Algorithm.RING, shipped.select(Algorithm.AUTO, 65536, Placement.flat(1000)).algorithm());
    // Every peer through memory: no network link to assume, the table whatever the size of the group.
    AlgorithmSelector memory = AlgorithmSelector.of(config, true, true, SEGMENT);
    assertEquals(Algorithm.DIRECT, memory.select(Algorithm.AUTO, 4, Placement.flat(8)).algorithm());
    assertEquals(table.select(Algorithm.AUTO, 65536, Placement.flat(1000)),
        memory.select(Algorithm.AUTO, 65536, Placement.flat(1000)));
    // Told a link, the model for every group that spans processes, however small.
    AlgorithmSelector toldByConfig = AlgorithmSelector.of(CollectiveConfig.from(Map.of(CollectiveConfig.LINK_MBPS,
        "10000", CollectiveConfig.STEP_MICROS, "10")), false, true, SEGMENT);
    assertEquals(told.select(Algorithm.AUTO, 4, Placement.flat(4)), toldByConfig.select(Algorithm.AUTO, 4,
        Placement.flat(4)));
    assertNotEquals(table.select(Algorithm.AUTO, 4, Placement.flat(4)), toldByConfig.select(Algorithm.AUTO, 4,
        Placement.flat(4)), "4 B on 4 ranks: the model takes another than the table");
  }

  /**
   * Each barrier stage forms a new group and selector; one with the link and placement of an earlier group takes
   * that group's choices instead of predicting again (up to about 100 ms per size class at 1000 ranks).
   */
  @Test
  void shouldShareChoicesBetweenGroupsOfOneLinkAndPlacement() {
    // A segment size no other test uses: a model of its own, whatever ran before in this JVM.
    int segment = 3 * 65536 + 4096;
    CollectiveConfig config = CollectiveConfig.defaults();
    Placement p = Placement.flat(64);
    long before = AlgorithmSelector.predictions();
    AlgorithmChoice first = AlgorithmSelector.of(config, false, true, segment).select(Algorithm.AUTO, 1 << 20, p);
    assertEquals(before + 1, AlgorithmSelector.predictions(), "the first group predicts");
    AlgorithmChoice again = AlgorithmSelector.of(config, false, true, segment).select(Algorithm.AUTO, 1 << 20, p);
    assertEquals(first, again);
    assertEquals(before + 1, AlgorithmSelector.predictions(), "a second group of that link and placement does not");
    AlgorithmSelector.of(config, false, true, segment).select(Algorithm.AUTO, 1 << 20, Placement.flat(65));
    AlgorithmSelector.of(CollectiveConfig.from(Map.of(CollectiveConfig.LINK_MBPS, "1000")), false, true, segment)
        .select(Algorithm.AUTO, 1 << 20, p);
    assertEquals(before + 3, AlgorithmSelector.predictions(), "another placement, another link: predicted anew");
  }

  /** What ships for a group of one host, which reaches every peer through memory or not. */
  private static AlgorithmSelector oneHost(CollectiveConfig config, boolean memoryToAll) {
    return AlgorithmSelector.of(config, memoryToAll, true, config.segmentBytes());
  }

  /**
   * The link is measured where AUTO would follow the model on an assumed one (link not told, measuring allowed, a
   * network between the processes, and more than four of them or several hosts), and a selector on the measured
   * link picks as one told it.
   */
  @Test
  void shouldMeasureTheLinkOnlyWhereItWouldBeAssumed() {
    CollectiveConfig defaults = CollectiveConfig.defaults();
    Placement six = Placement.flat(6);
    Placement fourByTwo = Placement.of(new int[] {0, 0, 1, 1, 2, 2, 3, 3});
    assertTrue(defaults.measureLink(), "on by default");
    assertTrue(oneHost(defaults, false).measures(Algorithm.AUTO, six));
    assertTrue(oneHost(defaults, false).measures(Algorithm.AUTO, Placement.of(blocks(20, 4))));
    assertTrue(!oneHost(defaults, false).measures(Algorithm.RING, six), "a call that names one");
    assertTrue(!oneHost(defaults, false).measures(Algorithm.AUTO, fourByTwo), "the table's groups");
    AlgorithmSelector hosts = AlgorithmSelector.of(defaults, false, false, defaults.segmentBytes());
    for (Placement p : new Placement[] {Placement.flat(2), Placement.flat(3), fourByTwo, six}) {
      assertTrue(hosts.measures(Algorithm.AUTO, p), p + " across hosts");
    }
    assertTrue(!hosts.measures(Algorithm.AUTO, Placement.of(new int[] {0, 0, 0})), "one process");
    AlgorithmSelector hostsNotMeasuring = AlgorithmSelector.of(CollectiveConfig.from(Map.of(
        CollectiveConfig.MEASURE_LINK, "false")), false, false, defaults.segmentBytes());
    assertTrue(!hostsNotMeasuring.measures(Algorithm.AUTO, Placement.flat(3)), "across hosts, told not to");
    AlgorithmSelector table = new AlgorithmSelector(defaults.directMaxBytes(), defaults.directMaxRanks(),
        defaults.ringMinBytes(), Algorithm.AUTO);
    for (long bytes : new long[] {4, 16384, 1 << 20}) {
      assertEquals(table.select(Algorithm.AUTO, bytes, Placement.flat(3)),
          hostsNotMeasuring.select(Algorithm.AUTO, bytes, Placement.flat(3)), bytes + " B: the table, as before");
    }
    assertTrue(!oneHost(defaults, true).measures(Algorithm.AUTO, six), "reached through memory");
    assertTrue(!oneHost(CollectiveConfig.from(Map.of(CollectiveConfig.MEASURE_LINK, "false")), false)
        .measures(Algorithm.AUTO, six), "told not to");
    assertTrue(!oneHost(CollectiveConfig.from(Map.of(CollectiveConfig.LINK_MBPS, "1000")), false)
        .measures(Algorithm.AUTO, six), "told the link");
    assertTrue(!oneHost(CollectiveConfig.from(Map.of(CollectiveConfig.ALGORITHM, "RING")), false)
        .measures(Algorithm.AUTO, six), "an algorithm forced");
    AllReduceCostModel oneGbit = AllReduceCostModel.ofLink(1000, 50, 1, defaults.segmentBytes());
    AlgorithmSelector measured = oneHost(defaults, false).measured(oneGbit);
    AlgorithmSelector told = new AlgorithmSelector(defaults.directMaxBytes(), defaults.directMaxRanks(),
        defaults.ringMinBytes(), Algorithm.AUTO, oneGbit, false);
    assertTrue(!measured.measures(Algorithm.AUTO, six), "measured once");
    for (long bytes : new long[] {4, 65536, 1 << 20, 64 << 20}) {
      for (Placement p : new Placement[] {six, fourByTwo, Placement.flat(100)}) {
        assertEquals(told.select(Algorithm.AUTO, bytes, p), measured.select(Algorithm.AUTO, bytes, p), bytes + " on "
            + p);
      }
    }
    assertThrows(CollectiveUsageException.class, () -> CollectiveConfig.from(Map.of(CollectiveConfig.MEASURE_LINK,
        "yes")));
  }

  @Test
  void shouldTakeTheLinkFromTheConfiguration() {
    CollectiveConfig c = CollectiveConfig.from(Map.of(CollectiveConfig.LINK_MBPS, "1000",
        CollectiveConfig.STEP_MICROS, "40", CollectiveConfig.MESSAGE_MICROS, "7"));
    assertEquals(1000, c.linkMbps());
    assertEquals(40, c.stepMicros());
    assertEquals(7, c.messageMicros());
    assertEquals(1, CollectiveConfig.from(Map.of()).messageMicros());
    assertEquals(0, CollectiveConfig.from(Map.of()).linkMbps(), "not known by default");
  }
}
