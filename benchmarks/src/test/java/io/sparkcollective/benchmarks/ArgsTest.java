package io.sparkcollective.benchmarks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class ArgsTest {

  @Test
  void shouldReadEachOptionItsValueAndDefaultsForTheRest() {
    Args a = new Args(new String[] {"--n", "4", "--conf", "a=1,b=2", "--sizes", "4, 65536,1048576", "--f", "0.5"});
    assertEquals(4, a.getInt("n", 2));
    assertEquals("a=1,b=2", a.get("conf", ""));
    assertArrayEquals(new long[] {4, 65536, 1048576}, a.getLongs("sizes", new long[] {1}));
    assertEquals(0.5, a.getDouble("f", 1.0));
    assertEquals(7, a.getInt("reps", 7));
    assertArrayEquals(new long[] {1}, a.getLongs("missing", new long[] {1}));
    assertEquals("4", a.require("n"));
  }

  @Test
  void shouldRefuseAnOptionGivenTwiceInsteadOfKeepingOnlyTheLast() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new Args(new String[] {"--conf", "transport.sharedMemoryBytes=0", "--conf", "a=1"}));
    assertTrue(e.getMessage().contains("--conf given twice"), e.getMessage());
    assertTrue(e.getMessage().contains("--conf a=1,b=2"), "says how to give several values: " + e.getMessage());
  }

  @Test
  void shouldRefuseAnOptionWithoutValueAWordWithoutDashesAndAMissingRequiredOne() {
    IllegalArgumentException last = assertThrows(IllegalArgumentException.class,
        () -> new Args(new String[] {"--n", "4", "--reps"}));
    assertTrue(last.getMessage().contains("'--reps'"), last.getMessage());
    IllegalArgumentException bare = assertThrows(IllegalArgumentException.class,
        () -> new Args(new String[] {"n", "4"}));
    assertTrue(bare.getMessage().contains("'n'"), bare.getMessage());
    IllegalArgumentException required = assertThrows(IllegalArgumentException.class,
        () -> new Args(new String[] {"--n", "4"}).require("out"));
    assertEquals("missing --out", required.getMessage());
  }
}
