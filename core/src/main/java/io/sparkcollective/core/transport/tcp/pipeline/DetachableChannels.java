package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.channel.Channel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.util.List;

/**
 * NIO channels whose socket can be taken over once Netty has connected and authenticated it, for
 * connections whose bytes the waiting application threads move themselves (see
 * {@link io.sparkcollective.core.transport.tcp.link.SocketAdopter}).
 */
final class DetachableChannels {
  private DetachableChannels() {}

  /** A socket channel that hands out its JDK socket (after it has been deregistered from its event loop). */
  static final class Socket extends NioSocketChannel {
    public Socket() {
      super();
    }

    Socket(Channel parent, java.nio.channels.SocketChannel socket) {
      super(parent, socket);
    }

    private volatile boolean detached;

    java.nio.channels.SocketChannel socket() {
      return javaChannel();
    }

    /**
     * From now on the socket belongs to someone else: Netty may still close this channel object (its event
     * loop closes a channel whose selection key it finds cancelled, which deregistering does), but that must
     * not close the socket.
     */
    void markDetached() {
      detached = true;
    }

    @Override
    protected void doClose() throws Exception {
      if (!detached) {
        super.doClose();
      }
    }
  }

  /** A server channel whose accepted connections are {@link Socket}s. */
  static final class Server extends NioServerSocketChannel {
    @Override
    protected int doReadMessages(List<Object> buf) throws Exception {
      java.nio.channels.SocketChannel ch = javaChannel().accept();
      if (ch == null) {
        return 0;
      }
      try {
        buf.add(new Socket(this, ch));
        return 1;
      } catch (RuntimeException e) {
        ch.close();
        throw e;
      }
    }
  }
}
