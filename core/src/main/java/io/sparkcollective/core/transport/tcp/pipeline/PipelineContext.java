package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.channel.Channel;
import io.netty.util.concurrent.Promise;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.tcp.link.Inbound;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkKeys;
import io.sparkcollective.core.transport.tcp.link.LinkListener;
import io.sparkcollective.core.transport.tcp.link.RateLimitedLog;
import io.sparkcollective.core.transport.tcp.link.SocketAdopter;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import java.io.IOException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the handlers of one endpoint's pipelines share: its identity, its secret and where links go once
 * authenticated (staying in the pipeline, or handed over to the adopter).
 */
final class PipelineContext {
  private static final Logger LOG = LoggerFactory.getLogger(PipelineContext.class);
  final CollectiveConfig config;
  final SecretHandshake handshake;
  final Supplier<String> addressKey;
  final Inbound inbound;
  final LinkListener links;
  /** Takes authenticated plain sockets over (caller-driven I/O); null when the event loops move every byte. */
  final SocketAdopter adopter;
  /** Connections refused or failed during the handshake. */
  final AtomicLong refusals = new AtomicLong();
  /** Connections accepted and not yet authenticated (or refused). */
  final AtomicInteger unauthenticated = new AtomicInteger();
  final int maxUnauthenticated = Tuning.MAX_UNAUTHENTICATED_CONNECTIONS;
  /** Refusals, rate-limited per remote address. */
  final RateLimitedLog refusalLog = new RateLimitedLog(LoggerFactory.getLogger(HandshakeHandlers.class),
      NanoClock.SYSTEM, Tuning.WARNINGS_PER_ADDRESS, Tuning.WARNING_INTERVAL_MS);

  /** What the messages of this endpoint's connections carry besides their bytes (the same on both ends). */
  DataProtection protection() {
    return config.dataProtection();
  }

  PipelineContext(CollectiveConfig config, SecretHandshake handshake, Supplier<String> addressKey,
      Inbound inbound, LinkListener links, SocketAdopter adopter) {
    this.config = config;
    this.handshake = handshake;
    this.addressKey = addressKey;
    this.inbound = inbound;
    this.links = links;
    this.adopter = adopter;
  }

  String addressKey() {
    return addressKey.get();
  }

  /** An authenticated connection whose bytes the event loop moves is ready for messages. */
  void channelReady(String remoteKey, Channel ch, Link link) {
    links.opened(link, remoteKey);
    // Heartbeats keep the peer's reader-idle timer quiet while no data flows.
    long every = config.heartbeatIntervalMs();
    ScheduledFuture<?> beat = ch.eventLoop().scheduleAtFixedRate(() -> {
      if (ch.isActive()) {
        ch.writeAndFlush(ControlMessages.heartbeat(ch.alloc()), ch.voidPromise());
      }
    }, every, every, TimeUnit.MILLISECONDS);
    ch.closeFuture().addListener(f -> beat.cancel(false));
  }

  /**
   * Takes an authenticated connection away from Netty (no more reads by its event loop, handlers removed,
   * deregistered) and gives its socket to the adopter; completes {@code done} with the new link. The
   * handshake guarantees nothing follows ACCEPT until the dialling side has sent something, so no bytes are
   * left behind in Netty's buffers.
   */
  void detach(Channel ch, String remoteKey, boolean isOutbound, LinkKeys keys, Promise<Link> done) {
    ch.config().setAutoRead(false);
    DetachableChannels.Socket socket = (DetachableChannels.Socket) ch;
    socket.markDetached();
    for (String name : new String[] {"idle", "frames"}) {
      if (ch.pipeline().get(name) != null) {
        ch.pipeline().remove(name);
      }
    }
    ch.deregister().addListener(f -> {
      try {
        if (!f.isSuccess()) {
          throw new IOException("deregistering from the event loop failed: " + f.cause());
        }
        Link link = adopter.adopt(socket.socket(), remoteKey, isOutbound, keys);
        links.opened(link, remoteKey);
        if (done != null) {
          done.trySuccess(link);
        }
      } catch (IOException | RuntimeException e) {
        LOG.warn("{}: cannot take over the connection to {}: {}", addressKey(), remoteKey, e.toString());
        socket.socket().close();
        if (done != null) {
          done.tryFailure(e);
        }
      }
    });
  }

}
