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
 * operations ({@code failures}) and group set-up time ({@code groupSetup}, a timer).
 */
final class CollectiveMetrics implements OperationObserver {
  private final Timer operations;
  private final Counter bytes;
  private final Counter failures;
  private final Timer groupSetup;

  CollectiveMetrics(MetricRegistry registry) {
    this.operations = registry.timer("operations");
    this.bytes = registry.counter("bytes");
    this.failures = registry.counter("failures");
    this.groupSetup = registry.timer("groupSetup");
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
