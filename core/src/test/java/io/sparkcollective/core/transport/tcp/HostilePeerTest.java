package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.FramePool;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Attackers and broken peers on raw sockets against real endpoints, in both progress modes: listeners that
 * never prove the secret, relays, oversized and silent unauthenticated connections, and authenticated peers
 * that speak for ranks their endpoint does not host.
 */
@Timeout(120)
class HostilePeerTest {
  private static CollectiveConfig config(String progress) {
    return CollectiveConfig.from(Map.of(CollectiveConfig.PROGRESS, progress,
        CollectiveConfig.CONNECT_TIMEOUT_MS, "1000", CollectiveConfig.JOIN_TIMEOUT_MS, "5000"));
  }

  private static String key(InetSocketAddress a) {
    return a.getHostString() + ":" + a.getPort();
  }

  /** Everything a socket sends until it closes (at most 10 s). */
  private static byte[] drain(RawPeer p) throws Exception {
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    p.socket.setSoTimeout(10_000);
    byte[] b = new byte[4096];
    try {
      for (int n; (n = p.socket.getInputStream().read(b)) >= 0; ) {
        all.write(b, 0, n);
      }
    } catch (java.io.IOException reset) {
      // closed by a reset
    }
    return all.toByteArray();
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void aListenerThatAcceptsWithoutProvingTheSecretGetsNothingButTheHello(String progress) throws Exception {
    try (TcpEndpoint victim = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config(progress));
        ServerSocket fake = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      InetSocketAddress fakeAddress = new InetSocketAddress("127.0.0.1", fake.getLocalPort());
      CompletableFuture<byte[]> afterHello = CompletableFuture.supplyAsync(() -> {
        try (RawPeer p = new RawPeer(fake.accept())) {
          assertEquals(WireFormat.HELLO, p.read()[0]);
          p.write(RawPeer.message(WireFormat.ACCEPT));
          return drain(p);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
          () -> victim.join("bypass", 0, List.of(victim.address(), fakeAddress)));
      assertInstanceOf(CollectiveAuthenticationException.class, e, e.toString());
      assertTrue(e.getMessage().contains("during the handshake (expected CHALLENGE)"), e.getMessage());
      assertArrayEquals(new byte[0], afterHello.get(20, TimeUnit.SECONDS),
          "no JOIN, ring offer or DATA may follow a bare ACCEPT");
    }
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void aRelayCanNeitherPassOnAHelloUnchangedNorRenameItsSender(String progress) throws Exception {
    try (TcpEndpoint a = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config(progress));
        TcpEndpoint b = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config(progress));
        ServerSocket relay = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      InetSocketAddress relayAddress = new InetSocketAddress("127.0.0.1", relay.getLocalPort());
      for (boolean rename : new boolean[] {false, true}) {
        CompletableFuture<String> seen = CompletableFuture.supplyAsync(() -> {
          try (RawPeer fromA = new RawPeer(relay.accept()); RawPeer toB = new RawPeer(b.address())) {
            byte[] hello = fromA.read();
            byte[] nonce = java.util.Arrays.copyOfRange(hello, 5, 5 + SecretHandshake.NONCE_BYTES);
            // Unchanged: B sees it was meant for the relay's address. Renamed: as a third endpoint, to B.
            toB.write(rename ? RawPeer.hello(nonce, "127.0.0.1:1", b.addressKey())
                : RawPeer.message(WireFormat.HELLO, java.util.Arrays.copyOfRange(hello, 1, hello.length)));
            byte[] fromB = toB.read();
            if (fromB[0] != WireFormat.CHALLENGE) {
              return "B answered " + fromB[0] + ": " + new String(fromB, 1, fromB.length - 1,
                  java.nio.charset.StandardCharsets.UTF_8);
            }
            fromA.write(RawPeer.message(fromB[0], java.util.Arrays.copyOfRange(fromB, 1, fromB.length)));
            byte[] response = fromA.read();
            return response == null ? "A closed" : "A answered " + response[0];
          } catch (Exception e) {
            return "relay failed: " + e;
          }
        });
        Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
            () -> a.join("relay-" + rename, 0, List.of(a.address(), relayAddress)));
        assertInstanceOf(CollectiveAuthenticationException.class, e, e.toString());
        String outcome = seen.get(20, TimeUnit.SECONDS);
        if (rename) {
          assertEquals("A closed", outcome, "A must not answer a challenge made for another hello");
        } else {
          assertTrue(outcome.startsWith("B answered " + WireFormat.REFUSE) && outcome.contains("it dialled "
              + key(relayAddress) + ", but this endpoint is " + b.addressKey()), outcome);
        }
      }
      assertEquals(0, b.openConnections(), "the relay never got an authenticated connection to B");
    }
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void anOversizedMessageBeforeAuthenticationIsRefusedBeforeItIsBuffered(String progress) throws Exception {
    try (TcpEndpoint e = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config(progress))) {
      long before = PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory();
      List<RawPeer> peers = new ArrayList<>();
      byte[] chunk = new byte[1 << 16];
      try {
        for (int i = 0; i < 8; i++) {
          RawPeer p = new RawPeer(e.address());
          peers.add(p);
          ByteBuffer head = ByteBuffer.allocate(5).order(ByteOrder.LITTLE_ENDIAN).putInt(64 << 20)
              .put(WireFormat.HELLO);
          p.write(head.array());
        }
        long peak = 0;
        for (RawPeer p : peers) {
          try {
            for (int k = 0; k < 16; k++) {
              p.write(chunk);
            }
          } catch (java.io.IOException closed) {
            // what should happen: the endpoint closed it
          }
          peak = Math.max(peak, PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory() - before);
        }
        for (RawPeer p : peers) {
          assertTrue(p.closedWithin(3000), "a connection announcing 64 MiB before authenticating stays open");
        }
        assertTrue(peak < 16 << 20, "direct memory grew by " + (peak >> 20) + " MiB for 8 unauthenticated sockets");
      } finally {
        for (RawPeer p : peers) {
          p.close();
        }
      }
    }
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void silentConnectionsAreClosedAtTheHandshakeDeadlineAndCappedMeanwhile(String progress) throws Exception {
    try (TcpEndpoint e = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config(progress))) {
      List<RawPeer> peers = new ArrayList<>();
      try {
        for (int i = 0; i < 80; i++) {
          peers.add(new RawPeer(e.address()));
        }
        long start = System.nanoTime();
        Thread.sleep(300);
        int early = 0;
        for (RawPeer p : peers) {
          early += p.closedWithin(5) ? 1 : 0;
        }
        assertEquals(16, early, "connections past the cap of 64 unauthenticated ones are closed at once, the "
            + "others not before the deadline");
        for (RawPeer p : peers) {
          assertTrue(p.closedWithin(4000), "a silent connection outlived the handshake deadline of 1000 ms");
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(ms < 4000, ms + " ms");
        assertTrue(e.refusedConnections() >= 80, "refusals counted: " + e.refusedConnections());
        // The endpoint still serves real peers.
        try (TcpEndpoint other = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config(progress))) {
          List<InetSocketAddress> group = List.of(e.address(), other.address());
          ExecutorService pool = Executors.newFixedThreadPool(2);
          try {
            Future<TcpTransport> r0 = pool.submit(() -> e.join("after-flood", 0, group));
            Future<TcpTransport> r1 = pool.submit(() -> other.join("after-flood", 1, group));
            r0.get(10, TimeUnit.SECONDS).close();
            r1.get(10, TimeUnit.SECONDS).close();
          } finally {
            pool.shutdownNow();
          }
        }
      } finally {
        for (RawPeer p : peers) {
          p.close();
        }
      }
    }
  }

  private static byte[] dataMessage(long group, int source, int dest, float value) {
    FramePool pool = new FramePool(1024, DataHeader.BYTES, 16);
    Frame f = pool.acquire(4);
    f.header(io.sparkcollective.core.api.CollectiveKind.ALL_REDUCE.ordinal(), 0, 0, 0, source, 0, 0, 0, 0, 1, 0);
    ByteBuf out = io.netty.buffer.Unpooled.buffer(DataHeader.BYTES + 4);
    out.setFloatLE(DataHeader.BYTES, value);
    DataHeader.write(out, f, source, dest, group, 0, 0, 4);
    byte[] b = new byte[out.readableBytes()];
    out.readBytes(b);
    pool.release(f);
    return b;
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void anAuthenticatedPeerCannotSpeakForRanksItsEndpointDoesNotHost(String progress) throws Exception {
    try (TcpCluster cluster = new TcpCluster(2, config(progress))) {
      List<Communicator> g = cluster.group("speak-for");
      TcpEndpoint a = cluster.endpoint(0);
      long group = TcpEndpoint.groupId("speak-for");
      try (RawPeer intruder = new RawPeer(a.address())) {
        assertEquals(WireFormat.ACCEPT, intruder.handshake(TcpCluster.SECRET, "127.0.0.1:1", a.addressKey()),
            "a peer with the secret authenticates, as its own endpoint");
        intruder.writeTagged(ControlMessages.abort(PooledByteBufAllocator.DEFAULT, group, 1, 0, 1, "forged abort"));
        intruder.writeTagged(ControlMessages.leave(PooledByteBufAllocator.DEFAULT, group, 1, 0, 1));
        intruder.write(dataMessage(group, 1, 0, 1000f));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (a.droppedMessages() < 3 && System.nanoTime() < until) {
          Thread.sleep(5);
        }
        assertEquals(3, a.droppedMessages(), "ABORT, LEAVE and DATA claiming rank 1 from another endpoint");
        // The group did not notice: it sums as before, without the intruder's +1000.
        float[][] v = {{1.5f, -2.25f}, {0.5f, 0.25f}};
        GroupHarness.run(g, java.time.Duration.ofSeconds(20), c -> {
          c.allReduce(v[c.rank()], ReduceOp.SUM);
          return null;
        });
        assertArrayEquals(new float[] {2f, -2f}, v[0]);
        assertArrayEquals(new float[] {2f, -2f}, v[1]);
        g.get(0).checkHealth();
        g.get(1).checkHealth();
      }
      for (Communicator c : g) {
        c.close();
      }
    }
  }

  @ParameterizedTest(name = "progress={0}")
  @ValueSource(strings = {"caller", "eventLoop"})
  void aMessageWithAForgedTagEndsTheConnectionAndNothingElse(String progress) throws Exception {
    try (TcpCluster cluster = new TcpCluster(2, config(progress))) {
      List<Communicator> g = cluster.group("forged-tag");
      TcpEndpoint a = cluster.endpoint(0);
      try (RawPeer intruder = new RawPeer(a.address())) {
        assertEquals(WireFormat.ACCEPT, intruder.handshake(TcpCluster.SECRET, "127.0.0.1:1", a.addressKey()));
        byte[] abort = RawPeer.message(WireFormat.ABORT, new byte[8 + 12 + 16]);
        intruder.write(abort);
        assertTrue(intruder.closedWithin(3000), "a message whose tag does not match closes the connection");
      }
      g.get(0).checkHealth();
      g.get(1).checkHealth();
      for (Communicator c : g) {
        c.close();
      }
    }
  }
}
