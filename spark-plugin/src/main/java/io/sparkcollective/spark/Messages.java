package io.sparkcollective.spark;

import java.util.Arrays;
import java.util.List;

/**
 * What executors and tasks tell the driver plugin (through {@code PluginContext.ask}), and its answers.
 *
 * <p>On the wire every message is a {@code String[]} whose first element names its kind: Spark deserializes
 * RPC messages on its I/O threads with the JVM's class loader, which does not see classes of a jar added with
 * {@code --jars} or of the application jar, so only JDK types may cross.
 */
final class Messages {
  private Messages() {}

  static final String REGISTER = "collective.register";
  static final String JOIN = "collective.join";
  static final String REPLY = "collective.reply";
  static final String WHY = "collective.why";
  static final String STATS = "collective.stats";

  /** The kind of an encoded message, or null if it is not one of these. */
  static String kind(Object message) {
    return message instanceof String[] && ((String[]) message).length > 0 ? ((String[]) message)[0] : null;
  }

  /** An executor's endpoint is up at {@code address} ({@code host:port}). */
  static final class RegisterEndpoint {
    final String executorId;
    final String address;

    RegisterEndpoint(String executorId, String address) {
      this.executorId = executorId;
      this.address = address;
    }

    String[] encode() {
      return new String[] {REGISTER, executorId, address};
    }

    static RegisterEndpoint decode(String[] m) {
      check(m, REGISTER, 3);
      return new RegisterEndpoint(m[1], m[2]);
    }
  }

  /**
   * Rank {@code rank} of {@code size} of group {@code group}, the tasks of attempt {@code stageAttempt} of
   * stage {@code stageId}, runs on executor {@code executorId}.
   */
  static final class Join {
    final String group;
    final int rank;
    final int size;
    final String executorId;
    final int stageId;
    final int stageAttempt;

    Join(String group, int rank, int size, String executorId, int stageId, int stageAttempt) {
      this.group = group;
      this.rank = rank;
      this.size = size;
      this.executorId = executorId;
      this.stageId = stageId;
      this.stageAttempt = stageAttempt;
    }

    String[] encode() {
      return new String[] {JOIN, group, Integer.toString(rank), Integer.toString(size), executorId,
          Integer.toString(stageId), Integer.toString(stageAttempt)};
    }

    static Join decode(String[] m) {
      check(m, JOIN, 7);
      try {
        return new Join(m[1], Integer.parseInt(m[2]), Integer.parseInt(m[3]), m[4], Integer.parseInt(m[5]),
            Integer.parseInt(m[6]));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("malformed " + JOIN + " message: " + Arrays.toString(m), e);
      }
    }
  }

  /**
   * The driver's answer to a {@link Join}: the peers' endpoint addresses by rank once all joined; or an
   * error; or that the stage attempt failed ({@code failedRank}: the rank whose task failed, -1 if the failure
   * was not one task's; {@code executorLost}: because the executor of that rank is gone); else none of these
   * (ask again).
   */
  static final class JoinReply {
    final List<String> peers;
    final String error;
    final boolean attemptFailed;
    final int failedRank;
    final boolean executorLost;

    private JoinReply(List<String> peers, String error, boolean attemptFailed, int failedRank,
        boolean executorLost) {
      this.peers = peers;
      this.error = error;
      this.attemptFailed = attemptFailed;
      this.failedRank = failedRank;
      this.executorLost = executorLost;
    }

    static JoinReply peers(List<String> peers) {
      return new JoinReply(peers, null, false, -1, false);
    }

    static JoinReply waitForPeers() {
      return new JoinReply(null, null, false, -1, false);
    }

    static JoinReply error(String error) {
      return new JoinReply(null, error, false, -1, false);
    }

    static JoinReply attemptFailed(int failedRank, boolean executorLost, String why) {
      return new JoinReply(null, why, true, failedRank, executorLost);
    }

    /**
     * {@code [REPLY, "peers", address...]}, {@code [REPLY, "error", text]}, {@code [REPLY, "failed" or "lost",
     * rank, text]} or {@code [REPLY, "wait"]}.
     */
    String[] encode() {
      if (attemptFailed) {
        return new String[] {REPLY, executorLost ? "lost" : "failed", Integer.toString(failedRank), error};
      }
      if (error != null) {
        return new String[] {REPLY, "error", error};
      }
      if (peers == null) {
        return new String[] {REPLY, "wait"};
      }
      String[] m = new String[peers.size() + 2];
      m[0] = REPLY;
      m[1] = "peers";
      for (int i = 0; i < peers.size(); i++) {
        m[i + 2] = peers.get(i);
      }
      return m;
    }

    static JoinReply decode(Object reply) {
      if (!REPLY.equals(kind(reply)) || ((String[]) reply).length < 2) {
        throw new IllegalArgumentException("unexpected answer from the driver plugin: " + describe(reply));
      }
      String[] m = (String[]) reply;
      switch (m[1]) {
        case "error":
          return error(m.length > 2 ? m[2] : "unknown error");
        case "failed":
        case "lost":
          if (m.length != 4) {
            throw new IllegalArgumentException("unexpected answer from the driver plugin: " + describe(reply));
          }
          return attemptFailed(Integer.parseInt(m[2]), m[1].equals("lost"), m[3]);
        case "wait":
          return waitForPeers();
        case "peers":
          return peers(Arrays.asList(m).subList(2, m.length));
        default:
          throw new IllegalArgumentException("unexpected answer from the driver plugin: " + describe(reply));
      }
    }
  }

  /**
   * Why did attempt {@code stageAttempt} of stage {@code stageId} fail? Answered like a {@link Join} whose
   * attempt failed, or with "wait" if the driver knows of no failure (yet).
   */
  static final class Why {
    final int stageId;
    final int stageAttempt;

    Why(int stageId, int stageAttempt) {
      this.stageId = stageId;
      this.stageAttempt = stageAttempt;
    }

    String[] encode() {
      return new String[] {WHY, Integer.toString(stageId), Integer.toString(stageAttempt)};
    }

    static Why decode(String[] m) {
      check(m, WHY, 3);
      try {
        return new Why(Integer.parseInt(m[1]), Integer.parseInt(m[2]));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("malformed " + WHY + " message: " + Arrays.toString(m), e);
      }
    }
  }

  /**
   * What rank {@code rank} of {@code size} of {@code group} (attempt {@code stageAttempt} of stage {@code stageId})
   * did, sent when its task ends: the group's formation time, its operations, user bytes, all-reduce bytes and
   * time, and each recorded operation's duration in microseconds.
   */
  static final class Stats {
    final String group;
    final int stageId;
    final int stageAttempt;
    final int rank;
    final int size;
    final long formedNanos;
    final long operations;
    final long bytes;
    final long allReduceBytes;
    final long allReduceNanos;
    final long[] opMicros;
    /** The host of this rank's endpoint. */
    final String host;
    /** Per source rank: payload bytes received over the network and the nanoseconds they took (see LinkReceipts). */
    final long[] linkBytes;
    final long[] linkNanos;

    Stats(String group, int stageId, int stageAttempt, int rank, int size, long formedNanos, long operations,
        long bytes, long allReduceBytes, long allReduceNanos, long[] opMicros, String host, long[] linkBytes,
        long[] linkNanos) {
      this.group = group;
      this.stageId = stageId;
      this.stageAttempt = stageAttempt;
      this.rank = rank;
      this.size = size;
      this.formedNanos = formedNanos;
      this.operations = operations;
      this.bytes = bytes;
      this.allReduceBytes = allReduceBytes;
      this.allReduceNanos = allReduceNanos;
      this.opMicros = opMicros;
      this.host = host;
      this.linkBytes = linkBytes;
      this.linkNanos = linkNanos;
      if (linkBytes.length != linkNanos.length || (linkBytes.length != 0 && linkBytes.length != size)) {
        throw new IllegalArgumentException("link receipts of " + linkBytes.length + " and " + linkNanos.length
            + " ranks in a report of a group of " + size);
      }
    }

    String[] encode() {
      StringBuilder ops = new StringBuilder();
      for (int i = 0; i < opMicros.length; i++) {
        ops.append(i == 0 ? "" : ",").append(opMicros[i]);
      }
      StringBuilder links = new StringBuilder();
      for (int i = 0; i < linkBytes.length; i++) {
        links.append(i == 0 ? "" : ",").append(linkBytes[i]).append('/').append(linkNanos[i]);
      }
      return new String[] {STATS, group, Integer.toString(stageId), Integer.toString(stageAttempt),
          Integer.toString(rank), Integer.toString(size), Long.toString(formedNanos), Long.toString(operations),
          Long.toString(bytes), Long.toString(allReduceBytes), Long.toString(allReduceNanos), ops.toString(), host,
          links.toString()};
    }

    static Stats decode(String[] m) {
      check(m, STATS, 14);
      try {
        String[] parts = m[11].isEmpty() ? new String[0] : m[11].split(",");
        if (parts.length > StageStats.MAX_OPS) {
          throw new IllegalArgumentException("more than " + StageStats.MAX_OPS + " operation durations");
        }
        long[] ops = new long[parts.length];
        for (int i = 0; i < ops.length; i++) {
          ops[i] = Long.parseLong(parts[i]);
        }
        String[] links = m[13].isEmpty() ? new String[0] : m[13].split(",");
        if (links.length > CollectiveDriverPlugin.MAX_GROUP_SIZE) {
          throw new IllegalArgumentException("link receipts of more than " + CollectiveDriverPlugin.MAX_GROUP_SIZE
              + " ranks");
        }
        long[] linkBytes = new long[links.length];
        long[] linkNanos = new long[links.length];
        for (int i = 0; i < links.length; i++) {
          int slash = links[i].indexOf('/');
          if (slash < 0) {
            throw new IllegalArgumentException("malformed link receipt " + links[i]);
          }
          linkBytes[i] = Long.parseLong(links[i].substring(0, slash));
          linkNanos[i] = Long.parseLong(links[i].substring(slash + 1));
        }
        return new Stats(m[1], Integer.parseInt(m[2]), Integer.parseInt(m[3]), Integer.parseInt(m[4]),
            Integer.parseInt(m[5]), Long.parseLong(m[6]), Long.parseLong(m[7]), Long.parseLong(m[8]),
            Long.parseLong(m[9]), Long.parseLong(m[10]), ops, m[12], linkBytes, linkNanos);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("malformed " + STATS + " message: " + Arrays.toString(m), e);
      }
    }
  }

  private static void check(String[] m, String kind, int length) {
    if (m.length != length || !kind.equals(m[0])) {
      throw new IllegalArgumentException("malformed " + kind + " message: " + Arrays.toString(m));
    }
  }

  static String describe(Object message) {
    return message instanceof String[] ? Arrays.toString((String[]) message) : String.valueOf(message);
  }
}
