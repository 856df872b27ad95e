package io.sparkcollective.core.transport.netty;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.TcpCluster;
import java.util.Map;
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
    group = FuzzGroup.form(endpoint, group);
  }

  @AfterAll
  static void stop() {
    endpoint.close();
  }

  @FuzzTest(maxDuration = "30s")
  void receivePipelineSurvivesAnyBytes(byte[] input) throws Exception {
    if (++inputs % 5000 == 0) {
      group = FuzzGroup.form(endpoint, group); // releases whatever frames the inputs queued
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
