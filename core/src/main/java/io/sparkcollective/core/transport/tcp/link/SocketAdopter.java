package io.sparkcollective.core.transport.tcp.link;

import java.io.IOException;
import java.nio.channels.SocketChannel;

/** Takes over an authenticated plain socket once the pipeline that connected and authenticated it lets go. */
public interface SocketAdopter {
  /**
   * Starts moving {@code socket}'s bytes (connected, authenticated, no longer registered anywhere) as the link
   * to {@code remoteKey}; {@code outbound} if this endpoint dialled it; its messages are tagged and checked
   * with {@code keys}.
   */
  Link adopt(SocketChannel socket, String remoteKey, boolean outbound, LinkKeys keys) throws IOException;
}
