package io.sparkcollective.core.transport.tcp.link;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.time.NanoClock;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.helpers.NOPLogger;

/** Peer-supplied text made safe for logs, and warnings about one address rate-limited. */
@Timeout(10)
class PeerTextTest {
  @Test
  void shouldEscapeWhatWouldForgeALogLineAndKeepTheRest() {
    assertEquals("10.0.0.1:7077", PeerText.escape("10.0.0.1:7077"));
    assertEquals("a\\u000a2026-12-01 WARN forged\\u000d", PeerText.escape("a\n2026-12-01 WARN forged\r"));
    assertEquals("tab\\u0009bidi\\u202e", PeerText.escape("tab\tbidi\u202e"));
    assertEquals("null", PeerText.escape(null));
  }

  @Test
  void shouldCutLongTextSayingHowMuchWasCut() {
    String s = PeerText.escape("x".repeat(PeerText.MAX_CHARS + 10));
    assertTrue(s.startsWith("x".repeat(PeerText.MAX_CHARS) + "... (10 more characters)"), s);
  }

  @Test
  void shouldLogAFewLinesPerAddressAndIntervalAndCountTheRest() {
    AtomicLong now = new AtomicLong();
    NanoClock clock = now::get;
    RateLimitedLog log = new RateLimitedLog(NOPLogger.NOP_LOGGER, clock, 3, 1000);
    int logged = 0;
    for (int i = 0; i < 100; i++) {
      logged += log.warn("10.0.0.9", "refused {}", i) ? 1 : 0;
    }
    assertEquals(3, logged);
    assertEquals(97, log.suppressed("10.0.0.9"));
    assertTrue(log.warn("10.0.0.8", "another address has its own lines"));
    now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1000));
    assertTrue(log.warn("10.0.0.9", "the next interval logs again (and sums up the last)"));
    assertEquals(0, log.suppressed("10.0.0.9"));
    assertFalse(log.warn("10.0.0.9", "x") && log.warn("10.0.0.9", "y") && log.warn("10.0.0.9", "z"));
  }

  @Test
  void shouldTrackABoundedNumberOfAddresses() {
    AtomicLong now = new AtomicLong();
    RateLimitedLog log = new RateLimitedLog(NOPLogger.NOP_LOGGER, now::get, 1, 1000);
    for (int i = 0; i < 3 * RateLimitedLog.MAX_KEYS; i++) {
      log.warn("10.1." + (i >> 8) + "." + (i & 255), "flood {}", i);
    }
    assertTrue(log.warn("10.2.0.1", "a new address is still heard after a flood of others"));
  }
}
