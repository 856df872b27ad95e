package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.codahale.metrics.MetricRegistry;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.engine.EngineCommunicator;
import io.sparkcollective.core.engine.LocalGroup;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class CollectiveMetricsTest {

  @Test
  void shouldCountOperationsBytesAndFailuresOfACommunicator() throws Exception {
    MetricRegistry registry = new MetricRegistry();
    CollectiveMetrics metrics = new CollectiveMetrics(registry);
    LocalGroup group = LocalGroup.create(2);
    ((EngineCommunicator) group.communicator(0)).observe(metrics);
    group.run(comm -> {
      comm.allReduce(new float[1000], ReduceOp.SUM);
      comm.allReduce(new double[10], ReduceOp.MAX);
      return null;
    });
    assertEquals(2, registry.timer("operations").getCount());
    assertEquals(1000 * 4 + 10 * 8, registry.counter("bytes").getCount());
    group.communicator(1).close();
    assertThrows(CollectiveException.class, () -> group.communicator(0).allReduce(new float[1], ReduceOp.SUM));
    assertEquals(1, registry.counter("failures").getCount());
    metrics.groupFormed(3_000_000);
    assertEquals(1, registry.timer("groupSetup").getCount());
    assertEquals(List.of("bytes", "failures", "groupSetup", "operations"), List.copyOf(registry.getNames()));
    group.close();
  }
}
