package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code transport.dataProtection}: results stay exact in every mode and path (Netty's threads, caller-driven
 * sockets, shared-memory rings); what crosses the socket is what the mode promises, checked against the
 * format computed here with the JDK's own HMAC and AES-GCM; altered, misrouted and mismatched traffic ends
 * the connection.
 */
@Timeout(180)
class DataProtectionTest {
  private static final int HEAD_BYTES = DataHeader.BYTES - WireFormat.TYPE_OFFSET - 1;

  private static CollectiveConfig config(String progress, DataProtection protection, String... more) {
    Map<String, String> m = new HashMap<>(Map.of(CollectiveConfig.PROGRESS, progress,
        CollectiveConfig.DATA_PROTECTION, protection.toString(), CollectiveConfig.SEGMENT_BYTES, "65536",
        CollectiveConfig.CONNECT_TIMEOUT_MS, "2000", CollectiveConfig.JOIN_TIMEOUT_MS, "10000"));
    for (int i = 0; i < more.length; i += 2) {
      m.put(more[i], more[i + 1]);
    }
    return CollectiveConfig.from(m);
  }

  @ParameterizedTest(name = "{0}, progress={1}, sharedMemoryBytes={2}")
  @CsvSource({"authenticate, caller, 0", "authenticate, caller, 16777216", "authenticate, eventLoop, 0",
      "encrypt, caller, 0", "encrypt, caller, 16777216", "encrypt, eventLoop, 0"})
  void sumsAreExactInEveryModeAndPath(String mode, String progress, int ring) throws Exception {
    CollectiveConfig c = config(progress, DataProtection.parse(mode), CollectiveConfig.SHARED_MEMORY_BYTES,
        String.valueOf(ring));
    try (TcpCluster cluster = new TcpCluster(3, c)) {
      List<Communicator> g = cluster.group("sealed-" + mode + progress + ring);
      for (int n : new int[] {3, 100_000, 1_000_003}) {
        float[][] v = new float[3][n];
        float[] expected = new float[n];
        for (int r = 0; r < 3; r++) {
          for (int i = 0; i < n; i++) {
            v[r][i] = (i * 7 + r * 13) % 1001 - 500; // small integers: every sum is exact in float
            expected[i] += v[r][i];
          }
        }
        GroupHarness.run(g, Duration.ofSeconds(60), comm -> {
          comm.allReduce(v[comm.rank()], ReduceOp.SUM);
          return null;
        });
        for (int r = 0; r < 3; r++) {
          assertArrayEquals(expected, v[r], "rank " + r + ", " + n + " floats");
        }
      }
      if (ring > 0) {
        assertTrue(cluster.endpoint(0).sharedMemoryPayloads() > 0, "payloads went through the rings");
      }
      GroupHarness.closeAll(g);
    }
  }

  @ParameterizedTest(name = "{0}, progress={1}")
  @CsvSource({"authenticate, caller", "authenticate, eventLoop", "encrypt, caller", "encrypt, eventLoop"})
  void whatCrossesTheSocketIsWhatTheModePromises(String mode, String progress) throws Exception {
    DataProtection protection = DataProtection.parse(mode);
    CollectiveConfig c = config(progress, protection, CollectiveConfig.ALGORITHM, "DIRECT",
        CollectiveConfig.SHARED_MEMORY_BYTES, "0");
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (TcpEndpoint a = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, c);
        ServerSocket fake = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      InetSocketAddress fakeAddress = new InetSocketAddress("127.0.0.1", fake.getLocalPort());
      String fakeKey = "127.0.0.1:" + fake.getLocalPort();
      float[] mine = {1.5f, -2.25f, 3f, 0.125f, 1e6f, -7f, 42f, 0.5f};
      float[] theirs = {10f, 20f, 30f, 40f, 50f, 60f, 70f, 80f};
      float[] original = mine.clone();
      Future<float[]> rank0 = pool.submit(() -> {
        try (Communicator comm = TcpGroup.join(a, "wire-" + mode, 0, List.of(a.address(), fakeAddress), c)) {
          comm.allReduce(mine, ReduceOp.SUM);
          return mine;
        }
      });
      try (RawPeer p = new RawPeer(fake.accept())) {
        byte[] transcript = p.listen(TcpCluster.SECRET, fakeKey, protection);
        byte[] key = new SecretHandshake(TcpCluster.SECRET).directionKey(transcript, true);
        long seq = 0; // every message after ACCEPT is sealed: the JOIN, any heartbeat, the DATA
        for (byte[] m; (m = p.read()) != null; seq++) {
          if (m[0] == WireFormat.JOIN) {
            assertTrue(opens(protection, key, seq, m, 0), "the JOIN opens under the format's own computation");
            ByteBuf join = ControlMessages.join(UnpooledByteBufAllocator.DEFAULT, TcpEndpoint.groupId("wire-" + mode),
                1, 0, 2);
            p.writeTagged(join);
          } else if (m[0] == WireFormat.DATA) {
            int payloadAt = HEAD_BYTES + 1;
            byte[] clear = littleEndian(original);
            byte[] onWire = Arrays.copyOfRange(m, payloadAt, payloadAt + clear.length);
            if (protection == DataProtection.ENCRYPT) {
              assertFalse(Arrays.equals(clear, onWire), "encrypted: the payload is not on the wire in clear");
            } else {
              assertArrayEquals(clear, onWire, "authenticated: the payload is in clear, followed by its tag");
            }
            assertTrue(opens(protection, key, seq, m, clear.length), "the DATA opens, tag and all");
            assertArrayEquals(clear, Arrays.copyOfRange(m, payloadAt, payloadAt + clear.length),
                "and holds rank 0's vector");
            p.writeTagged(reply(m, clear.length, theirs));
            break;
          }
        }
        float[] sum = rank0.get(30, TimeUnit.SECONDS);
        for (int i = 0; i < sum.length; i++) {
          assertEquals(original[i] + theirs[i], sum[i], "element " + i + ": the peer's sealed DATA was opened");
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Whether {@code m} (type, head, body, tag, as read) is the {@code seq}-th message of the dialler's direction,
   * computed from the format alone: in place for ENCRYPT (the body is in clear afterwards).
   */
  private static boolean opens(DataProtection protection, byte[] directionKey, long seq, byte[] m, int payload)
      throws Exception {
    int headBytes = m[0] == WireFormat.DATA ? HEAD_BYTES : 0;
    int bodyAt = 1 + headBytes;
    int tagAt = m.length - 16;
    if (protection == DataProtection.ENCRYPT) {
      Mac derive = Mac.getInstance("HmacSHA256");
      derive.init(new SecretKeySpec(directionKey, "HmacSHA256"));
      derive.update("aes-256-gcm".getBytes(StandardCharsets.US_ASCII));
      byte[] aesKey = derive.doFinal();
      byte[] nonce = ByteBuffer.allocate(12).putInt(0).putLong(seq).array();
      Cipher gcm = Cipher.getInstance("AES/GCM/NoPadding");
      gcm.init(Cipher.DECRYPT_MODE, new SecretKeySpec(aesKey, "AES"), new GCMParameterSpec(128, nonce));
      gcm.updateAAD(m, 0, bodyAt);
      try {
        byte[] clear = gcm.doFinal(m, bodyAt, m.length - bodyAt);
        System.arraycopy(clear, 0, m, bodyAt, clear.length);
        return true;
      } catch (javax.crypto.AEADBadTagException e) {
        return false;
      }
    }
    Mac hmac = Mac.getInstance("HmacSHA256");
    hmac.init(new SecretKeySpec(directionKey, "HmacSHA256"));
    hmac.update(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(seq).array());
    hmac.update(m, 0, tagAt);
    return Arrays.equals(Arrays.copyOf(hmac.doFinal(), 16), Arrays.copyOfRange(m, tagAt, m.length));
  }

  private static byte[] littleEndian(float[] v) {
    ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float x : v) {
      b.putFloat(x);
    }
    return b.array();
  }

  /** Rank 1's DATA for rank 0: the header of rank 0's frame (same call, same step) from 1 to 0, with {@code v}. */
  private static ByteBuf reply(byte[] m, int payload, float[] v) {
    ByteBuf out = Unpooled.buffer();
    WireFormat.begin(out, WireFormat.DATA);
    out.writeBytes(m, 1, HEAD_BYTES);
    out.writeBytes(littleEndian(v));
    out.setIntLE(DataHeader.SOURCE_OFFSET, 1);
    out.setIntLE(DataHeader.DEST_OFFSET, 0);
    WireFormat.finish(out, 0);
    return out;
  }

  private static byte[] bytes(ByteBuf b) {
    byte[] out = new byte[b.readableBytes()];
    b.readBytes(out);
    b.release();
    return out;
  }

  @ParameterizedTest(name = "{0}, progress={1}")
  @CsvSource({"authenticate, caller", "authenticate, eventLoop", "encrypt, caller", "encrypt, eventLoop"})
  void alteredOrMisroutedDataEndsTheConnectionAndLeavesTheGroupAlone(String mode, String progress)
      throws Exception {
    DataProtection protection = DataProtection.parse(mode);
    try (TcpCluster cluster = new TcpCluster(2, config(progress, protection))) {
      List<Communicator> g = cluster.group("tamper");
      TcpEndpoint a = cluster.endpoint(0);
      long group = TcpEndpoint.groupId("tamper");
      float[] payload = {1000f};
      try (RawPeer intruder = new RawPeer(a.address())) {
        assertEquals(WireFormat.ACCEPT, intruder.handshake(TcpCluster.SECRET, "127.0.0.1:1", a.addressKey(),
            protection));
        intruder.write(sealedData(intruder, group, 1, 0, payload, -1));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (a.droppedMessages() < 1 && System.nanoTime() < until) {
          Thread.sleep(5);
        }
        assertEquals(1, a.droppedMessages(), "a well-sealed frame for a rank the peer does not host is dropped");
        assertFalse(intruder.closedWithin(300), "and the connection stays");
        // One payload byte changed after sealing.
        intruder.write(sealedData(intruder, group, 1, 0, payload, DataHeader.BYTES + 2));
        assertTrue(intruder.closedWithin(3000), "an altered payload ends the connection");
      }
      try (RawPeer intruder = new RawPeer(a.address())) {
        assertEquals(WireFormat.ACCEPT, intruder.handshake(TcpCluster.SECRET, "127.0.0.1:2", a.addressKey(),
            protection));
        // The header's destination changed after sealing, to a rank nobody hosts: read, opened, refused.
        intruder.write(sealedData(intruder, group, 1, 0, payload, DataHeader.DEST_OFFSET));
        assertTrue(intruder.closedWithin(3000), "a header altered to have the frame dropped ends the connection");
      }
      // The altered frame may count as dropped too: a caller-driven reader routes a payload by its header before
      // the tag at its end arrives.
      assertTrue(a.droppedMessages() <= 2, String.valueOf(a.droppedMessages()));
      float[][] v = {{1.5f, -2.25f}, {0.5f, 0.25f}};
      GroupHarness.run(g, Duration.ofSeconds(20), comm -> {
        comm.allReduce(v[comm.rank()], ReduceOp.SUM);
        return null;
      });
      assertArrayEquals(new float[] {2f, -2f}, v[0], "the group sums as before, without the intruder's 1000");
      assertArrayEquals(new float[] {2f, -2f}, v[1]);
      GroupHarness.closeAll(g);
    }
  }

  /** A sealed DATA message from {@code source} to {@code dest}, with the byte at {@code flip} changed after sealing. */
  private static byte[] sealedData(RawPeer p, long group, int source, int dest, float[] v, int flip) {
    ByteBuf out = Unpooled.buffer();
    WireFormat.begin(out, WireFormat.DATA);
    out.writeZero(HEAD_BYTES);
    out.setByte(DataHeader.KIND_OFFSET, io.sparkcollective.core.api.CollectiveKind.ALL_REDUCE.ordinal());
    out.setIntLE(DataHeader.SOURCE_OFFSET, source);
    out.setIntLE(DataHeader.DEST_OFFSET, dest);
    out.setLongLE(DataHeader.GROUP_OFFSET, group);
    out.setLongLE(DataHeader.COUNT_OFFSET, v.length);
    out.setIntLE(DataHeader.ROOT_OFFSET, -1);
    out.writeBytes(littleEndian(v));
    WireFormat.finish(out, 0);
    p.seal(out);
    byte[] b = bytes(out);
    if (flip >= 0) {
      b[flip] ^= 0x5A;
    }
    return b;
  }

  @Test
  void endpointsThatProtectDifferentlyRefuseEachOtherNamingBoth() throws Exception {
    CollectiveConfig encrypting = config("caller", DataProtection.ENCRYPT);
    CollectiveConfig plain = config("caller", DataProtection.NONE);
    try (TcpCluster cluster = new TcpCluster(List.of(encrypting, plain))) {
      ExecutionException e = assertThrows(ExecutionException.class, () -> cluster.group("mismatch"));
      assertInstanceOf(CollectiveAuthenticationException.class, e.getCause(), e.toString());
      String m = e.getCause().getMessage();
      assertTrue(m.contains("data protection is") && m.contains("encrypt") && m.contains("none")
          && m.contains("transport.dataProtection"), m);
    }
  }
}
