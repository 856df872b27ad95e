package io.sparkcollective.core.transport.tcp.direct;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
}
