package io.sparkcollective.spark;

import io.sparkcollective.core.config.CollectiveConfig;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Driver side: makes a random secret per application (handed to executors in the plugin's init map, over
 * Spark's own RPC), keeps the executors' endpoint addresses, and forms groups: each rank of a barrier stage
 * asks with a JOIN until every rank of its group has, then gets all ranks' endpoint addresses.
 *
 * <p>{@link #receive} runs on one thread of Spark's RPC and never waits: a JOIN of an incomplete group is
 * answered "not yet" and the task asks again after a short pause.
 */
public final class CollectiveDriverPlugin implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(CollectiveDriverPlugin.class);
  static final String SECRET_KEY = "secret";
  private static final long GROUP_TTL_MS = 30 * 60_000L;

  private final Map<String, String> endpoints = new HashMap<>();
  private final Map<String, Formation> groups = new HashMap<>();

  @Override
  public Map<String, String> init(SparkContext sc, PluginContext ctx) {
    // Fails the application at start on a bad setting, naming it, instead of failing every task later.
    CollectiveConfig config = SparkSettings.config(sc.getConf());
    for (String warning : SparkSettings.barrierWarnings(sc.getConf())) {
      LOG.warn("spark-collective needs barrier stages, but {}", warning);
    }
    if (config.tlsEnabled()) {
      LOG.info("spark-collective connections use TLS");
    }
    byte[] b = new byte[32];
    new SecureRandom().nextBytes(b);
    StringBuilder secret = new StringBuilder();
    for (byte x : b) {
      secret.append(String.format("%02x", x));
    }
    LOG.info("spark-collective driver plugin ready");
    return Collections.singletonMap(SECRET_KEY, secret.toString());
  }

  @Override
  public synchronized Object receive(Object message) {
    String kind = Messages.kind(message);
    if (Messages.REGISTER.equals(kind)) {
      Messages.RegisterEndpoint m = Messages.RegisterEndpoint.decode((String[]) message);
      endpoints.put(m.executorId, m.address);
      LOG.info("executor {} collective endpoint at {}", m.executorId, m.address);
      return Boolean.TRUE;
    }
    if (Messages.JOIN.equals(kind)) {
      return join(Messages.Join.decode((String[]) message)).encode();
    }
    throw new IllegalArgumentException("unexpected message " + Messages.describe(message));
  }

  private Messages.JoinReply join(Messages.Join m) {
    long now = System.currentTimeMillis();
    groups.values().removeIf(f -> now - f.createdMs > GROUP_TTL_MS);
    String address = endpoints.get(m.executorId);
    if (address == null) {
      return new Messages.JoinReply(null, "executor " + m.executorId + " has no collective endpoint (its plugin "
          + "failed to start; see the executor log)");
    }
    Formation f = groups.computeIfAbsent(m.group, g -> new Formation(m.size, now));
    if (f.size != m.size || m.rank < 0 || m.rank >= f.size) {
      return new Messages.JoinReply(null, "group " + m.group + " has " + f.size + " ranks; rank " + m.rank + " of "
          + m.size + " does not fit");
    }
    f.addresses[m.rank] = address;
    if (f.joined() < f.size) {
      return new Messages.JoinReply(null, null);
    }
    f.served[m.rank] = true;
    List<String> peers = new ArrayList<>(Arrays.asList(f.addresses));
    if (f.allServed()) {
      groups.remove(m.group);
      LOG.info("group {} formed with {} ranks", m.group, f.size);
    }
    return new Messages.JoinReply(peers, null);
  }

  private static final class Formation {
    final int size;
    final long createdMs;
    final String[] addresses;
    final boolean[] served;

    Formation(int size, long createdMs) {
      this.size = size;
      this.createdMs = createdMs;
      this.addresses = new String[size];
      this.served = new boolean[size];
    }

    int joined() {
      int n = 0;
      for (String a : addresses) {
        n += a == null ? 0 : 1;
      }
      return n;
    }

    boolean allServed() {
      for (boolean s : served) {
        if (!s) {
          return false;
        }
      }
      return true;
    }
  }

  /** For tests: groups still forming. */
  synchronized int formingGroups() {
    return groups.size();
  }
}
