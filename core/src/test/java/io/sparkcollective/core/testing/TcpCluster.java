package io.sparkcollective.core.testing;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.transport.tcp.TcpEndpoint;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * N endpoints on 127.0.0.1 (or on loopback addresses of their own: "hosts") in this JVM, with real sockets between
 * them, and groups formed over them.
 */
public final class TcpCluster implements AutoCloseable {
  public static final String SECRET = "test-secret";
  private final List<TcpEndpoint> endpoints = new ArrayList<>();
  private final List<CollectiveConfig> configs = new ArrayList<>();

  public TcpCluster(int endpoints, CollectiveConfig config) {
    this(java.util.Collections.nCopies(endpoints, config));
  }

  /** One endpoint per entry of {@code configs}, each with its own settings. */
  public TcpCluster(List<CollectiveConfig> configs) {
    for (CollectiveConfig c : configs) {
      this.configs.add(c);
      this.endpoints.add(TcpEndpoint.start("127.0.0.1", 0, SECRET, c));
    }
  }

  /**
   * One endpoint on each of {@code hosts} (loopback addresses such as 127.0.0.2: Linux routes all of 127/8 to
   * the loopback), as executors of that many hosts appear to a group.
   */
  public TcpCluster(CollectiveConfig config, String... hosts) {
    for (String host : hosts) {
      this.configs.add(config);
      this.endpoints.add(TcpEndpoint.start(host, 0, SECRET, config));
    }
  }

  public TcpEndpoint endpoint(int i) {
    return endpoints.get(i);
  }

  public List<InetSocketAddress> addresses() {
    List<InetSocketAddress> a = new ArrayList<>();
    for (TcpEndpoint e : endpoints) {
      a.add(e.address());
    }
    return a;
  }

  /** Rank r on endpoint r; joins all ranks concurrently (joining blocks until the group is complete). */
  /** Forms group {@code name} with rank r on endpoint r. */
  public List<Communicator> group(String name) throws Exception {
    int[] oneEach = new int[endpoints.size()];
    for (int r = 0; r < oneEach.length; r++) {
      oneEach[r] = r;
    }
    return group(name, oneEach);
  }

  /**
   * Forms group {@code name} with rank r on endpoint {@code endpointOf[r]}: several ranks per endpoint are
   * several tasks of one executor.
   */
  public List<Communicator> group(String name, int[] endpointOf) throws Exception {
    int n = endpointOf.length;
    List<InetSocketAddress> peers = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      peers.add(addresses().get(endpointOf[r]));
    }
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<Communicator>> joins = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        joins.add(pool.submit(() -> TcpGroup.join(endpoints.get(endpointOf[rank]), name, rank, peers,
            configs.get(endpointOf[rank]))));
      }
      List<Communicator> comms = new ArrayList<>();
      for (Future<Communicator> f : joins) {
        comms.add(f.get());
      }
      return comms;
    } finally {
      pool.shutdownNow();
    }
  }

  @Override
  public void close() {
    for (TcpEndpoint e : endpoints) {
      e.close();
    }
  }
}
