package io.sparkcollective.core.transport.tcp.direct;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class IdleStrategyTest {
  @Test
  void shouldSpinThenYieldThenPark() {
    IdleStrategy idle = new IdleStrategy(3, 50_000, 10_000_000);
    assertEquals(IdleStrategy.Phase.SPIN, idle.phase(0, 0));
    assertEquals(IdleStrategy.Phase.SPIN, idle.phase(2, 60_000), "the first polls spin however long they took");
    assertEquals(IdleStrategy.Phase.YIELD, idle.phase(3, 49_999));
    assertEquals(IdleStrategy.Phase.PARK, idle.phase(3, 50_000));
    assertEquals(10_000_000, idle.parkNanos(1_000_000_000L));
    assertEquals(1_234, idle.parkNanos(1_234));
    assertEquals(1, idle.parkNanos(-5), "a deadline already passed still blocks for the least time");
    assertThrows(IllegalArgumentException.class, () -> new IdleStrategy(-1, 0, 1));
  }

  @Test
  void shouldPollWithoutYieldingOnlyWhenEveryPeerIsAProcessOfThisHostAndTheyFitTheCores() {
    // Two processes on two cores, each reading the other through a ring: each has a core of its own.
    assertTrue(IdleStrategy.spinsWithoutYielding(true, 1, 2));
    assertTrue(IdleStrategy.spinsWithoutYielding(true, 3, 4));
    // Three or four processes on two cores: a spinner would hold the core its peer needs.
    assertFalse(IdleStrategy.spinsWithoutYielding(true, 2, 2));
    assertFalse(IdleStrategy.spinsWithoutYielding(true, 3, 2));
    // A peer on another host (a connection without a ring): its frames come through a system call anyway.
    assertFalse(IdleStrategy.spinsWithoutYielding(false, 1, 8));
    // No ring at all (the ranks are threads of this process, or shared memory is off).
    assertFalse(IdleStrategy.spinsWithoutYielding(true, 0, 8));
  }
}
