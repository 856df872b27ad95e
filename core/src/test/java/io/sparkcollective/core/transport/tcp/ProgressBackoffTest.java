package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.EngineCommunicator;
import io.sparkcollective.core.serialization.KryoObjectSerializer;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.tcp.direct.CallerDrivenIo;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An endpoint's progress thread reads the sockets when no application thread has for a millisecond, so that an
 * idle group still notices aborts and lost peers at once; but while a thread is inside an operation (it drives
 * the sockets itself whenever it waits) the progress thread stays out of the way for much longer, since every
 * message it read there would only be handed across threads. Here rank 0 stops driving, once between operations
 * and once inside one, while rank 1 sends it a message: the progress thread reads the first and not
 * the second, which rank 0 then receives itself, intact. (With the same backoff inside operations as between them,
 * the progress thread reads the second too.)
 */
@Timeout(60)
class ProgressBackoffTest {
  private static final Duration LIMIT = Duration.ofSeconds(30);
  /** Messages sent and received first, so that the sends timed below run compiled. */
  private static final int WARM_UP = 200;

  @Test
  void shouldLeaveTheSocketsToACallerInsideAnOperation() throws Exception {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, "0",
        CollectiveConfig.JOIN_TIMEOUT_MS, "10000"));
    // Rank 0 tells rank 1 when to send (a message number, or -1: stop); rank 1 says when it has sent.
    BlockingQueue<Integer> orders = new LinkedBlockingQueue<>();
    BlockingQueue<Integer> sent = new LinkedBlockingQueue<>();
    long[] between = new long[2];
    long[] inside = new long[2];
    try (TcpCluster cluster = new TcpCluster(2, config)) {
      List<InetSocketAddress> peers = cluster.addresses();
      GroupHarness.runRanks(2, LIMIT, r -> {
        TcpTransport t = cluster.endpoint(r).join("progress-backoff", r, peers);
        try (EngineCommunicator comm = new EngineCommunicator(t, config, new KryoObjectSerializer())) {
          if (r == 1) {
            for (int i = 0; i < WARM_UP; i++) {
              comm.send(DataBuffer.of(message(i)), 0, CollectiveOptions.DEFAULT);
            }
            while (true) {
              Integer m = orders.poll(20, TimeUnit.SECONDS);
              if (m == null || m < 0) {
                break;
              }
              comm.send(DataBuffer.of(message(m)), 0, CollectiveOptions.DEFAULT);
              sent.add(m);
            }
            return null;
          }
          int m = 0;
          for (; m < WARM_UP; m++) {
            receive(comm, m);
          }
          CallerDrivenIo io = cluster.endpoint(0).callerIo();
          // Between operations the progress thread reads the message while this thread sleeps.
          between[0] = io.progressReadies();
          orders.add(m);
          assertEquals(m, sent.poll(20, TimeUnit.SECONDS));
          long waitFrom = System.nanoTime();
          while (io.progressReadies() == between[0] && System.nanoTime() - waitFrom < TimeUnit.SECONDS.toNanos(5)) {
            Thread.sleep(1);
          }
          between[1] = io.progressReadies();
          receive(comm, m++);
          // Inside an operation (as while this thread folds a segment, or its core is taken), nobody reads for it.
          // An attempt counts if it stayed well inside the backoff of an operation (a slow machine can stretch it).
          boolean conclusive = false;
          for (int attempt = 0; attempt < 5 && !conclusive; attempt++, m++) {
            long begun = System.nanoTime();
            t.operationBegins();
            try {
              Thread.sleep(3); // the progress thread leaves the poll it was in
              inside[0] = io.progressReadies();
              orders.add(m);
              assertEquals(m, sent.poll(20, TimeUnit.SECONDS));
              Thread.sleep(3); // the message is in this endpoint's socket
              inside[1] = io.progressReadies();
              conclusive = System.nanoTime() - begun < TimeUnit.MILLISECONDS.toNanos(15);
            } finally {
              t.operationEnds();
            }
            receive(comm, m);
          }
          orders.add(-1);
          assertTrue(conclusive, "no attempt stayed inside 15 ms");
        }
        return null;
      }).forEach(o -> assertEquals(null, o.error));
    }
    assertTrue(between[1] > between[0], "the progress thread read the message sent between operations: "
        + between[0] + " -> " + between[1]);
    assertEquals(inside[0], inside[1], "the progress thread read nothing inside the operation");
  }

  private static float[] message(int m) {
    return new float[] {m, m + 0.5f, -m};
  }

  private static void receive(EngineCommunicator comm, int m) {
    float[] got = new float[3];
    comm.recv(DataBuffer.of(got), 1, CollectiveOptions.DEFAULT);
    assertArrayEquals(message(m), got, "message " + m);
  }
}
