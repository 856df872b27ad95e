package io.sparkcollective.core.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Netty's leak detector with every report recorded, so tests fail on a leaked buffer instead of a log line
 * nobody reads. The build installs it for every test JVM with {@code -Dio.netty.customResourceLeakDetector}
 * and {@code -Dio.netty.leakDetection.level=paranoid} (see core/pom.xml), before Netty's first buffer.
 */
public final class NettyLeaks<T> extends ResourceLeakDetector<T> {
  private static final List<String> REPORTS = new CopyOnWriteArrayList<>();
  private static volatile boolean constructed;

  /** The constructor Netty calls for a custom detector. */
  public NettyLeaks(Class<?> resourceType, int samplingInterval) {
    super(resourceType, samplingInterval);
    constructed = true;
  }

  /**
   * The older form, which Netty looks for first (and logs an error when it is missing) before the one above.
   * {@code maxActive} has no meaning any more.
   */
  public NettyLeaks(Class<?> resourceType, int samplingInterval, long maxActive) {
    this(resourceType, samplingInterval);
  }

  @Override
  protected void reportTracedLeak(String resourceType, String records) {
    REPORTS.add(resourceType + " leaked:" + records);
    super.reportTracedLeak(resourceType, records);
  }

  @Override
  protected void reportUntracedLeak(String resourceType) {
    REPORTS.add(resourceType + " leaked (untraced)");
    super.reportUntracedLeak(resourceType);
  }

  /** True when the build installed this detector (the assertions below mean something only then). */
  public static boolean active() {
    ByteBuf probe = PooledByteBufAllocator.DEFAULT.directBuffer(1);
    probe.release();
    return constructed && ResourceLeakDetector.getLevel() == ResourceLeakDetector.Level.PARANOID;
  }

  /** Collects garbage and lets the detector look, then returns every leak reported in this JVM so far. */
  public static List<String> collect() throws InterruptedException {
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(50);
      // Leaks are reported when the detector tracks a new buffer.
      ByteBuf probe = PooledByteBufAllocator.DEFAULT.directBuffer(16);
      probe.release();
    }
    return List.copyOf(REPORTS);
  }

  /** Forgets the reports (only for the test that leaks on purpose to prove detection works). */
  public static void clear() {
    REPORTS.clear();
  }
}
