package io.sparkcollective.core.transport.tcp.link;

import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;

/**
 * What every link hands the messages it reads to, whichever I/O engine reads it: the groups of the link's
 * endpoint. DATA goes to the {@link Receiver} of the rank it is for; group messages to the
 * {@link ControlMessages.Handler} methods. See {@link MessageDispatcher}.
 */
public interface Inbound extends ControlMessages.Handler {
  /**
   * The receiver of DATA from {@code remoteKey} for rank {@code dest} of {@code group}; null if no such rank is
   * here (the frame is dropped and counted: a stale stage attempt or a foreign group).
   */
  Receiver receiver(String remoteKey, long group, int dest);
}
