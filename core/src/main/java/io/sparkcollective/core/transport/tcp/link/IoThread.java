package io.sparkcollective.core.transport.tcp.link;

import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.concurrent.ThreadFactory;

/**
 * A thread that moves an endpoint's bytes (Netty's event loops, the caller-driven progress thread). Such a
 * thread must never block: it writes once a connection is ready instead of waiting to dial (see
 * the endpoint's connections). Marked by its class, not its name.
 */
public final class IoThread extends FastThreadLocalThread {
  public IoThread(Runnable body, String name) {
    super(body, name);
    setDaemon(true);
  }

  /** True on a thread of this kind. */
  public static boolean current() {
    return Thread.currentThread() instanceof IoThread;
  }

  /** Netty's event-loop threads, named {@code collective-io-N}. */
  public static ThreadFactory factory() {
    return new DefaultThreadFactory("collective-io", true) {
      @Override
      protected Thread newThread(Runnable r, String name) {
        return new IoThread(r, name);
      }
    };
  }
}
