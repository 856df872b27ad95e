package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.ReduceOp;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class LocalGroupTest {

  @Test
  void shouldRunEveryRankOnItsOwnThreadAndReturnResultsInRankOrder() throws Exception {
    LocalGroup group = LocalGroup.create(4);
    try {
      List<String> names = group.run(comm -> {
        int[] x = {comm.rank()};
        comm.allReduce(x, ReduceOp.SUM);
        return Thread.currentThread().getName() + "=" + x[0];
      });
      assertEquals(List.of("rank-0=6", "rank-1=6", "rank-2=6", "rank-3=6"), names);
    } finally {
      group.close();
    }
  }

  @Test
  void shouldReleaseTheOtherRanksAtOnceWhenOneRankThrows() {
    LocalGroup group = LocalGroup.create(3);
    long t0 = System.nanoTime();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> group.run(comm -> {
      if (comm.rank() == 1) {
        throw new IllegalArgumentException("bad input on rank 1");
      }
      comm.allReduce(new float[10], ReduceOp.SUM); // would wait a minute for rank 1 without the release
      return null;
    }));
    assertEquals("bad input on rank 1", e.getMessage());
    assertEquals(2, e.getSuppressed().length);
    for (Throwable s : e.getSuppressed()) {
      assertTrue(s instanceof CollectiveException, s.toString());
    }
    assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "other ranks were not released");
  }
}
