package io.sparkcollective.spark;

import java.io.Serializable;
import java.util.List;

/** What executors and tasks tell the driver plugin (through {@code PluginContext.ask}), and its answers. */
final class Messages {
  private Messages() {}

  /** An executor's endpoint is up at {@code address} ({@code host:port}). */
  static final class RegisterEndpoint implements Serializable {
    private static final long serialVersionUID = 1L;
    final String executorId;
    final String address;

    RegisterEndpoint(String executorId, String address) {
      this.executorId = executorId;
      this.address = address;
    }
  }

  /** Rank {@code rank} of {@code size} of group {@code group} runs on executor {@code executorId}. */
  static final class Join implements Serializable {
    private static final long serialVersionUID = 1L;
    final String group;
    final int rank;
    final int size;
    final String executorId;

    Join(String group, int rank, int size, String executorId) {
      this.group = group;
      this.rank = rank;
      this.size = size;
      this.executorId = executorId;
    }
  }

  /** The driver's answer to a {@link Join}: the peers' endpoint addresses by rank once all joined, else none. */
  static final class JoinReply implements Serializable {
    private static final long serialVersionUID = 1L;
    final List<String> peers;
    final String error;

    JoinReply(List<String> peers, String error) {
      this.peers = peers;
      this.error = error;
    }
  }
}
