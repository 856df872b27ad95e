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
    leakOne();
    // The report comes once a collection has found the buffer unreachable, which on a busy machine may take
    // more than one round of collect().
    List<String> after = NettyLeaks.collect();
    long until = System.nanoTime() + 20_000_000_000L;
    while (after.size() <= before.size() && System.nanoTime() < until) {
      after = NettyLeaks.collect();
    }
    try {
      assertTrue(after.size() > before.size(), "the dropped buffer was not reported");
      assertFalse(after.get(after.size() - 1).isEmpty());
    } finally {
      NettyLeaks.clear();
    }
  }

  private static void leakOne() {
    ByteBuf leaked = PooledByteBufAllocator.DEFAULT.directBuffer(64);
    leaked.writeLong(42);
  }
}
