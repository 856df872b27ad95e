package io.sparkcollective.core.algorithm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class PlacementTest {
  @Test
  void shouldNumberNodesByTheirLowestRankWhateverIdsTheTransportGave() {
    Placement p = Placement.of(new int[] {7, 3, 7, 3, 9});
    assertEquals(5, p.ranks());
    assertEquals(3, p.nodeCount());
    assertArrayEquals(new int[] {0, 2}, p.members(0));
    assertArrayEquals(new int[] {1, 3}, p.members(1));
    assertArrayEquals(new int[] {4}, p.members(2));
    assertEquals(1, p.nodeOf(3));
    assertEquals(0, p.evenRanksPerNode(), "2, 2 and 1 ranks: uneven");
    assertTrue(p.isTwoLevel());
    assertEquals("Placement{[0, 2] | [1, 3] | [4]}", p.toString());
  }

  @Test
  void shouldTellEvenTwoLevelPlacementsFromFlatAndSingleNodeOnes() {
    Placement even = Placement.of(new int[] {0, 0, 1, 1, 2, 2});
    assertEquals(2, even.evenRanksPerNode());
    assertTrue(even.isTwoLevel());
    assertFalse(Placement.flat(4).isTwoLevel(), "a rank per node");
    assertEquals(1, Placement.flat(4).evenRanksPerNode());
    assertFalse(Placement.of(new int[4]).isTwoLevel(), "one node");
    assertEquals(4, Placement.of(new int[4]).evenRanksPerNode());
  }

  @Test
  void shouldCompareByWhichRanksShareANode() {
    assertEquals(Placement.of(new int[] {5, 5, 6}), Placement.of(new int[] {0, 0, 1}));
    assertEquals(Placement.of(new int[] {5, 5, 6}).hashCode(), Placement.of(new int[] {0, 0, 1}).hashCode());
    assertNotEquals(Placement.of(new int[] {0, 1, 1}), Placement.of(new int[] {0, 0, 1}));
  }

  @Test
  void shouldTellNodesOfConsecutiveRanksFromInterleavedOnes() {
    assertTrue(Placement.of(new int[] {0, 0, 1, 1, 2, 2}).consecutive());
    assertTrue(Placement.flat(3).consecutive());
    assertFalse(Placement.of(new int[] {0, 1, 0, 1}).consecutive(), "ranks 0 and 2 on one node");
    assertFalse(Placement.of(new int[] {0, 0, 1, 0}).consecutive(), "rank 1's node interrupts node 0's block");
  }
}
