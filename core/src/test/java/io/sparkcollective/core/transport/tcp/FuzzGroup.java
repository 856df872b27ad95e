package io.sparkcollective.core.transport.tcp;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Group "fuzz" with both of its ranks on one endpoint, so that fuzzed messages naming it (its id is a
 * constant the fuzzer finds) reach a registered transport. Re-forming it releases the frames inputs queued.
 */
final class FuzzGroup {
  private FuzzGroup() {}

  /** Closes {@code old} (if any) and forms the group anew. */
  static TcpTransport[] form(TcpEndpoint endpoint, TcpTransport[] old) throws Exception {
    if (old != null) {
      for (TcpTransport t : old) {
        t.close();
      }
    }
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<InetSocketAddress> peers = List.of(endpoint.address(), endpoint.address());
      Future<TcpTransport> a = pool.submit(() -> endpoint.join("fuzz", 0, peers));
      Future<TcpTransport> b = pool.submit(() -> endpoint.join("fuzz", 1, peers));
      return new TcpTransport[] {a.get(), b.get()};
    } finally {
      pool.shutdownNow();
    }
  }
}
