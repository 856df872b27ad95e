package io.sparkcollective.core.transport.netty;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.TcpCluster;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

/**
 * Arbitrary bytes into the receive pipeline, before the handshake (the handshake handler) and after it
 * (the message handler, with a group registered so DATA, ABORT, JOIN and LEAVE reach a transport): nothing
 * may escape as an unexpected exception, hang, or exhaust memory. `mvn verify` runs 30 s of coverage-guided
 * fuzzing (JAZZER_FUZZ=1); plain unit runs replay the corpus. Longer campaigns repeat the run, which resumes
 * from the saved corpus (see README).
 */
@Timeout(300)
class WireDecoderFuzzTest {
  private static NettyEndpoint endpoint;
  private static TcpTransport[] group;
  private static int inputs;

  @BeforeAll
  static void start() throws Exception {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.JOIN_TIMEOUT_MS, "5000"));
    endpoint = NettyEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config);
    newGroup();
  }

  /** Both ranks of group "fuzz" live on this endpoint, so its id can be found in inputs by the fuzzer. */
  private static void newGroup() throws Exception {
    if (group != null) {
      for (TcpTransport t : group) {
        t.close();
      }
    }
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<java.net.InetSocketAddress> peers = List.of(endpoint.address(), endpoint.address());
      Future<TcpTransport> a = pool.submit(() -> endpoint.join("fuzz", 0, peers));
      Future<TcpTransport> b = pool.submit(() -> endpoint.join("fuzz", 1, peers));
      group = new TcpTransport[] {a.get(), b.get()};
    } finally {
      pool.shutdownNow();
    }
  }

  @AfterAll
  static void stop() {
    endpoint.close();
  }

  @FuzzTest(maxDuration = "30s")
  void receivePipelineSurvivesAnyBytes(byte[] input) throws Exception {
    if (++inputs % 5000 == 0) {
      newGroup(); // releases whatever frames the inputs queued
    }
    boolean afterHandshake = input.length > 0 && (input[0] & 1) == 1;
    EmbeddedChannel ch = afterHandshake
        ? new EmbeddedChannel(WireFormat.newDecoder(), new MessageHandler(endpoint, "127.0.0.1:1", false))
        : new EmbeddedChannel(WireFormat.newDecoder(), new HandshakeHandlers.Server(endpoint));
    try {
      ch.writeInbound(Unpooled.wrappedBuffer(input, Math.min(1, input.length), Math.max(0, input.length - 1)));
    } catch (DecoderException expected) {
      // An oversized length field is rejected by the decoder: the connection would be closed.
    } finally {
      ch.finishAndReleaseAll();
    }
    assertTrue(endpoint.outstandingFrames() >= 0);
  }
}
