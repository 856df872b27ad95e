package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkKeys;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

/**
 * Arbitrary bytes into the caller-driven receive path (the parser of an authenticated plain connection, with
 * a group registered so that DATA, ABORT, JOIN and LEAVE reach a transport and payloads are read into
 * frames): each input goes over a real loopback socket into the endpoint, then the sending end closes. The
 * connection must end (closed on a protocol error or at the end of the bytes) within seconds, nothing may
 * escape as an unexpected exception, and no frame may be left half-read. `mvn verify` fuzzes for 30 s
 * (JAZZER_FUZZ=1); plain unit runs replay the corpus.
 */
@Timeout(300)
class DirectLinkFuzzTest {
  private static TcpEndpoint endpoint;
  private static ServerSocketChannel listener;
  private static TcpTransport[] group;
  private static int inputs;
  /** Keys of no real exchange: messages but DATA fail their tag check (and end the connection). */
  private static final LinkKeys KEYS = LinkKeys.of(new SecretHandshake(TcpCluster.SECRET), new byte[16], false,
      DataProtection.NONE);

  @BeforeAll
  static void start() throws Exception {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.JOIN_TIMEOUT_MS, "5000",
        CollectiveConfig.SEGMENT_BYTES, "65536"));
    endpoint = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config);
    listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    group = FuzzGroup.form(endpoint, group);
  }

  @AfterAll
  static void stop() throws Exception {
    endpoint.close();
    listener.close();
  }

  @FuzzTest(maxDuration = "30s")
  void parserSurvivesAnyBytes(byte[] input) throws Exception {
    if (++inputs % 2000 == 0) {
      group = FuzzGroup.form(endpoint, group); // releases whatever frames the inputs queued
    }
    Link link;
    try (SocketChannel sender = SocketChannel.open(listener.getLocalAddress())) {
      SocketChannel receiver = listener.accept();
      link = endpoint.callerIo().adopt(receiver, "127.0.0.1:1", false, KEYS);
      ByteBuffer b = ByteBuffer.wrap(input);
      while (b.hasRemaining()) {
        sender.write(b);
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (link.isActive() && System.nanoTime() < deadline) {
      Thread.sleep(0, 200_000);
    }
    assertTrue(!link.isActive(), "the connection did not end after its bytes did");
    // Every frame taken from the pool is queued for a rank: none was lost with a half-read message.
    assertEquals(group[0].queuedFrames() + group[1].queuedFrames(), endpoint.outstandingFrames());
  }
}
