package io.sparkcollective.core.transport.tcp.shm;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Unmapping of memory-mapped files at once, instead of whenever the GC finds their buffers unreachable. */
public final class Mappings {
  private static final Logger LOG = LoggerFactory.getLogger(Mappings.class);
  /** sun.misc.Unsafe#invokeCleaner bound to the instance; null where it is absent. */
  private static final MethodHandle UNMAP = unmapper();

  private Mappings() {}

  /**
   * Unmaps {@code map} now. The caller guarantees that nothing reads or writes it (or any view of it) any
   * more: an access after this crashes the JVM. Returns false if it is left to the GC.
   */
  public static boolean unmap(MappedByteBuffer map) {
    if (UNMAP == null) {
      return false;
    }
    try {
      UNMAP.invokeExact((ByteBuffer) map);
      return true;
    } catch (Throwable t) {
      LOG.debug("cannot unmap a mapping of {} bytes: {}", map.capacity(), t.toString());
      return false;
    }
  }

  private static MethodHandle unmapper() {
    try {
      Class<?> unsafe = Class.forName("sun.misc.Unsafe");
      java.lang.reflect.Field f = unsafe.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      return MethodHandles.lookup().findVirtual(unsafe, "invokeCleaner",
          MethodType.methodType(void.class, ByteBuffer.class)).bindTo(f.get(null));
    } catch (ReflectiveOperationException | RuntimeException e) {
      LOG.debug("mappings are unmapped by the GC: {}", e.toString());
      return null;
    }
  }
}
