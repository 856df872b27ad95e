package io.sparkcollective.spark;

import com.codahale.metrics.Counter;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveKind;
import io.sparkcollective.core.engine.OperationObserver;
import java.util.concurrent.TimeUnit;

/**
 * The executor's collective metrics, in the plugin's metric registry so they reach Spark's metrics sinks:
 * operations and their latency ({@code operations}, a timer), user bytes moved ({@code bytes}), failed
 * operations ({@code failures}) and group set-up time ({@code groupSetup}, a timer); once the endpoint runs,
 * its open connections ({@code openConnections}), the payloads it received through shared memory from
 * executors of the same host ({@code sharedMemoryPayloads}), the connections it refused during the handshake
 * ({@code refusedConnections}) and the messages of authenticated peers it dropped because they spoke for
 * ranks their executor does not host ({@code droppedMessages}), all gauges.
 */
final class CollectiveMetrics implements OperationObserver {
  private final Timer operations;
  private final Counter bytes;
  private final Counter failures;
  private final Timer groupSetup;
  private final MetricRegistry registry;

  CollectiveMetrics(MetricRegistry registry) {
    this.operations = registry.timer("operations");
    this.bytes = registry.counter("bytes");
    this.failures = registry.counter("failures");
    this.groupSetup = registry.timer("groupSetup");
    this.registry = registry;
  }

  /** Adds the gauges of the executor's endpoint (once it has started). */
  void watch(io.sparkcollective.core.transport.tcp.TcpEndpoint endpoint) {
    registry.gauge("openConnections", () -> endpoint::openConnections);
    registry.gauge("sharedMemoryPayloads", () -> endpoint::sharedMemoryPayloads);
    registry.gauge("refusedConnections", () -> endpoint::refusedConnections);
    registry.gauge("droppedMessages", () -> endpoint::droppedMessages);
  }

  @Override
  public void completed(CollectiveKind kind, long bytes, long nanos) {
    operations.update(nanos, TimeUnit.NANOSECONDS);
    this.bytes.inc(bytes);
  }

  @Override
  public void failed(CollectiveKind kind, CollectiveException error) {
    failures.inc();
  }

  void groupFormed(long nanos) {
    groupSetup.update(nanos, TimeUnit.NANOSECONDS);
  }
}
