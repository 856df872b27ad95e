package io.sparkcollective.core.engine;

import io.sparkcollective.core.api.Communicator;

/**
 * What the framework that hosts a group (the Spark plugin) needs of a communicator besides the collectives:
 * to abort it on its rank's behalf and to watch its operations. {@link TcpGroup} and {@link LocalGroup} hand
 * these out; {@link EngineCommunicator} is the implementation.
 */
public interface ManagedCommunicator extends Communicator {
  /**
   * Fails the group on purpose (for example because this rank's task failed): peers' current and later
   * operations throw a {@code RemoteFailureException} carrying {@code reason}. Close afterwards.
   */
  void abort(String reason);

  /** Reports every completed and failed operation to {@code observer} (metrics); null stops reporting. */
  void observe(OperationObserver observer);

  /** What this rank received over network links from each peer, and how fast; null if it has no such links. */
  io.sparkcollective.core.transport.LinkReceipts receipts();
}
