package io.sparkcollective.core.testing;

import io.sparkcollective.core.transport.ForwardingTransport;
import io.sparkcollective.core.transport.Transport;

/**
 * An in-JVM transport that reports a given rank-to-process map, to place ranks on "executors" in tests. The
 * processes count as executors of one host that do not share memory: a peer of another process is not reached
 * through memory, so AUTO chooses as it would between such processes (small messages across processes:
 * RECURSIVE_DOUBLING from three processes; past four processes the cost model on the link it measures).
 */
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

  @Override
  public boolean memoryToAll() {
    for (int node : nodes) {
      if (node != nodes[0]) {
        return false;
      }
    }
    return super.memoryToAll();
  }
}
