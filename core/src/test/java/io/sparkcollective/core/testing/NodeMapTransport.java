package io.sparkcollective.core.testing;

import io.sparkcollective.core.transport.ForwardingTransport;
import io.sparkcollective.core.transport.Transport;

/** An in-JVM transport that reports a given rank-to-process map, to place ranks on "executors" in tests. */
public final class NodeMapTransport extends ForwardingTransport {
  private final int[] nodes;

  public NodeMapTransport(Transport delegate, int[] nodes) {
    super(delegate);
    this.nodes = nodes.clone();
  }

  @Override
  public int[] nodes() {
    return nodes.clone();
  }
}
