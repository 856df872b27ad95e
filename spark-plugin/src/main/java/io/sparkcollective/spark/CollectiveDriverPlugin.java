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
 *
 * <p>A {@link StageAttemptListener} tells it when a stage attempt can no longer complete (a task failed or was
 * killed, the attempt failed or was cancelled, an executor of a forming group was lost): the attempt's
 * forming group is dropped and every JOIN of that attempt, then or later, is answered with the reason, naming
 * the task, its executor and its error. Ranks already in a formed group leave it through Spark's own kill of
 * the attempt's other tasks, which their waits check (see {@link CollectiveExecutorPlugin}); a WHY then gives
 * them the attempt's first failure for their error.
 *
 * <p>When a barrier task ends, its rank reports what it did; once every rank of a group has, the driver logs
 * the stage attempt's summary and shows it in its metrics ({@link StageSummaries}).
 */
public final class CollectiveDriverPlugin implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(CollectiveDriverPlugin.class);
  static final String SECRET_KEY = "secret";
  private static final long GROUP_TTL_MS = 30 * 60_000L;
  /** Largest group a JOIN may name (a barrier stage of more tasks than this would not fit any cluster). */
  static final int MAX_GROUP_SIZE = 1 << 16;
  /** Failed stage attempts remembered (the oldest is forgotten first): far more than run at once. */
  private static final int FAILED_ATTEMPTS_KEPT = 4096;

  /** The plugin running in this driver (tests), or null. */
  private static volatile CollectiveDriverPlugin instance;

  private final Map<String, String> endpoints = new HashMap<>();
  private final StageSummaries summaries = new StageSummaries();
  private final Map<String, Formation> groups = new HashMap<>();
  /** Why each recently failed stage attempt ("stage/attempt") failed: its first failure. */
  private final Map<String, Failure> failedAttempts = new java.util.LinkedHashMap<String, Failure>() {
    private static final long serialVersionUID = 1L;

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Failure> eldest) {
      return size() > FAILED_ATTEMPTS_KEPT;
    }
  };

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
    sc.addSparkListener(new StageAttemptListener(this));
    summaries.register(ctx.metricRegistry());
    instance = this;
    if (SparkSettings.sparkAuthenticates(sc.getConf())) {
      // Every executor derives the secret from Spark's own: none crosses the RPC.
      LOG.info("spark-collective driver plugin ready; connections authenticate with Spark's application secret");
      return Collections.emptyMap();
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
    if (Messages.STATS.equals(kind)) {
      StageSummaries.Summary s = summaries.add(Messages.Stats.decode((String[]) message));
      if (s != null) {
        LOG.info("{}", s);
      }
      return Boolean.TRUE;
    }
    if (Messages.WHY.equals(kind)) {
      Messages.Why m = Messages.Why.decode((String[]) message);
      Failure f = failedAttempts.get(attemptKey(m.stageId, m.stageAttempt));
      return (f == null ? Messages.JoinReply.waitForPeers()
          : Messages.JoinReply.attemptFailed(f.rank, f.executorLost, f.reason)).encode();
    }
    throw new IllegalArgumentException("unexpected message " + Messages.describe(message));
  }

  private Messages.JoinReply join(Messages.Join m) {
    long now = System.currentTimeMillis();
    groups.values().removeIf(f -> now - f.createdMs > GROUP_TTL_MS);
    Failure failed = failedAttempts.get(attemptKey(m.stageId, m.stageAttempt));
    if (failed != null) {
      return Messages.JoinReply.attemptFailed(failed.rank, failed.executorLost, "stage " + m.stageId + " attempt "
          + m.stageAttempt
          + " cannot form its group: " + failed.reason);
    }
    String address = endpoints.get(m.executorId);
    if (address == null) {
      return Messages.JoinReply.error("executor " + m.executorId + " has no collective endpoint (its plugin "
          + "failed to start; see the executor log)");
    }
    if (m.size < 1 || m.size > MAX_GROUP_SIZE) {
      return Messages.JoinReply.error("executor " + m.executorId + " asked to join " + m.group + " as a group of "
          + m.size + " ranks: a barrier stage has 1 to " + MAX_GROUP_SIZE + " tasks");
    }
    Formation f = groups.computeIfAbsent(m.group, g -> new Formation(m.size, m.stageId, m.stageAttempt, now));
    if (f.size != m.size || m.rank < 0 || m.rank >= f.size) {
      return Messages.JoinReply.error("group " + m.group + " has " + f.size + " ranks; rank " + m.rank + " of "
          + m.size + " does not fit");
    }
    if (f.executors[m.rank] != null && !f.executors[m.rank].equals(m.executorId)) {
      return Messages.JoinReply.error("rank " + m.rank + " of group " + m.group + " is claimed by executor "
          + m.executorId + ", but executor " + f.executors[m.rank] + " joined as it first");
    }
    f.addresses[m.rank] = address;
    f.executors[m.rank] = m.executorId;
    if (f.joined() < f.size) {
      return Messages.JoinReply.waitForPeers();
    }
    f.served[m.rank] = true;
    List<String> peers = new ArrayList<>(Arrays.asList(f.addresses));
    if (f.allServed()) {
      groups.remove(m.group);
      LOG.info("group {} formed with {} ranks", m.group, f.size);
    }
    return Messages.JoinReply.peers(peers);
  }

  private static String attemptKey(int stageId, int stageAttempt) {
    return stageId + "/" + stageAttempt;
  }

  /**
   * Attempt {@code stageAttempt} of stage {@code stageId} can no longer complete: {@code reason} (the rank
   * whose task failed, or -1; whether it failed because its executor was lost). Only its first failure is
   * kept; its forming group is dropped.
   */
  synchronized void attemptFailed(int stageId, int stageAttempt, int rank, boolean executorLost, String reason) {
    recordFailure(stageId, stageAttempt, new Failure(rank, executorLost, reason));
  }

  private void recordFailure(int stageId, int stageAttempt, Failure failure) {
    String key = attemptKey(stageId, stageAttempt);
    if (failedAttempts.containsKey(key)) {
      return;
    }
    failedAttempts.put(key, failure);
    String reason = failure.reason;
    if (groups.values().removeIf(f -> f.stageId == stageId && f.stageAttempt == stageAttempt)) {
      LOG.warn("stage {} attempt {}: {}; its forming group is aborted", stageId, stageAttempt, reason);
    }
  }

  /** {@code executorId} is gone: the attempts whose forming group has a rank there cannot complete. */
  synchronized void executorLost(String executorId, String reason) {
    endpoints.remove(executorId);
    for (Formation f : new ArrayList<>(groups.values())) {
      for (int r = 0; r < f.size; r++) {
        if (executorId.equals(f.executors[r])) {
          recordFailure(f.stageId, f.stageAttempt, new Failure(r, true, reason + " (it ran rank " + r + ")"));
          break;
        }
      }
    }
  }

  /** The first failure of a stage attempt: the rank it hit (-1: not one rank's) and whether it lost an executor. */
  private static final class Failure {
    final int rank;
    final boolean executorLost;
    final String reason;

    Failure(int rank, boolean executorLost, String reason) {
      this.rank = rank;
      this.executorLost = executorLost;
      this.reason = reason;
    }
  }

  private static final class Formation {
    final int size;
    final int stageId;
    final int stageAttempt;
    final long createdMs;
    final String[] addresses;
    final String[] executors;
    final boolean[] served;

    Formation(int size, int stageId, int stageAttempt, long createdMs) {
      this.size = size;
      this.stageId = stageId;
      this.stageAttempt = stageAttempt;
      this.createdMs = createdMs;
      this.addresses = new String[size];
      this.executors = new String[size];
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

  @Override
  public void shutdown() {
    if (instance == this) {
      instance = null;
    }
  }

  static CollectiveDriverPlugin instance() {
    return instance;
  }

  /** The latest stage attempt's summary (once all its ranks reported), or null. */
  StageSummaries.Summary lastSummary() {
    return summaries.last();
  }

  /** For tests: groups still forming. */
  synchronized int formingGroups() {
    return groups.size();
  }
}
