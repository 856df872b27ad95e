package io.sparkcollective.core.transport.tcp.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.tcp.link.LinkKeys;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

/**
 * Arbitrary bytes into the receive pipeline, before the handshake (the handshake handler) and after it
 * (the message handler, whose groups take every DATA payload into a pooled frame): nothing may escape as an
 * unexpected exception, close the connection for any reason but a named protocol breach, lose a frame taken
 * from the pool, hang, or exhaust memory. `mvn verify` runs 30 s of coverage-guided fuzzing (JAZZER_FUZZ=1);
 * plain unit runs replay the corpus. Longer campaigns repeat the run, which resumes from the saved corpus
 * (see README).
 */
@Timeout(300)
class WireDecoderFuzzTest {
  private static NettyPipelines pipelines;
  private static RecordingInbound groups;
  private static PipelineContext context;
  /** Keys of no real exchange: tagged messages fail their check, the rest (DATA) is decoded as it comes. */
  private static final LinkKeys KEYS = LinkKeys.of(new SecretHandshake(TcpCluster.SECRET), new byte[16], false,
      DataProtection.NONE);

  @BeforeAll
  static void start() {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "65536"));
    pipelines = new NettyPipelines(config, false);
    groups = new RecordingInbound(config.segmentBytes());
    context = new PipelineContext(config, new SecretHandshake(TcpCluster.SECRET), () -> "127.0.0.1:2", groups,
        groups, null);
  }

  @AfterAll
  static void stop() {
    pipelines.shutdown();
  }

  @FuzzTest(maxDuration = "30s")
  void receivePipelineSurvivesAnyBytes(byte[] input) {
    groups.events.clear();
    groups.lost.clear();
    boolean afterHandshake = input.length > 0 && (input[0] & 1) == 1;
    EmbeddedChannel ch = afterHandshake
        ? new EmbeddedChannel(NettyPipelines.frameDecoder(), new MessageHandler(context, "127.0.0.1:1", false, KEYS))
        : new EmbeddedChannel(NettyPipelines.frameDecoder(Tuning.HANDSHAKE_MAX_BYTES),
            new HandshakeHandlers.Server(context));
    try {
      ch.writeInbound(Unpooled.wrappedBuffer(input, Math.min(1, input.length), Math.max(0, input.length - 1)));
    } catch (DecoderException expected) {
      // An oversized length field is rejected by the decoder: the connection would be closed.
    } finally {
      ch.finishAndReleaseAll();
    }
    assertEquals(0, groups.pool.outstanding(), "frames taken from the pool and never completed");
    for (String why : groups.lost) {
      assertTrue(why.equals("connection closed") || why.startsWith("it sent ")
          || why.startsWith("io.netty.handler.codec.TooLongFrameException"),
          "the connection closed for an unexpected reason: " + why);
    }
  }
}
