package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.sparkcollective.core.testing.NettyLeaks;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Proves the leak check used by the TCP tests can fail: a buffer dropped without release is reported. */
@Timeout(60)
class NettyLeakDetectionTest {

  @Test
  void shouldReportABufferThatWasNeverReleased() throws Exception {
    assertTrue(NettyLeaks.active(), "the build must install the leak detector");
    List<String> before = NettyLeaks.collect();
    // Leaked on a thread that then ends, so no stack slot of this one can keep a buffer reachable; several,
    // so one collection that misses some still finds others.
    Thread leaker = new Thread(() -> {
      for (int i = 0; i < 8; i++) {
        leakOne(i);
      }
    }, "leaker");
    leaker.start();
    leaker.join();
    // The report comes once a collection has found a buffer unreachable, which on a busy machine may take
    // more than one round of collect().
    List<String> after = NettyLeaks.collect();
    long until = System.nanoTime() + 30_000_000_000L;
    while (after.size() <= before.size() && System.nanoTime() < until) {
      byte[][] pressure = new byte[64][];
      for (int i = 0; i < pressure.length; i++) {
        pressure[i] = new byte[1 << 16];
      }
      after = NettyLeaks.collect();
    }
    try {
      assertTrue(after.size() > before.size(), "the dropped buffers were not reported");
      assertFalse(after.get(after.size() - 1).isEmpty());
    } finally {
      NettyLeaks.clear();
    }
  }

  private static void leakOne(int i) {
    ByteBuf leaked = PooledByteBufAllocator.DEFAULT.directBuffer(64 + i);
    leaked.writeLong(42 + i);
  }
}
