package io.sparkcollective.core.engine;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ObjectSerializer;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.serialization.KryoObjectSerializer;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.Transport;
import io.sparkcollective.core.transport.local.LocalFabric;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * A group whose ranks are threads of this JVM, over the in-JVM transport: the fastest way to get
 * communicators, used for ranks sharing an executor and by tests. Each communicator must be driven by its
 * own thread (collectives block until all ranks take part).
 */
public final class LocalGroup {
  private final LocalFabric fabric;
  private final List<Communicator> communicators;

  private LocalGroup(LocalFabric fabric, List<Communicator> communicators) {
    this.fabric = fabric;
    this.communicators = communicators;
  }

  /** {@code size} ranks with the default configuration. */
  public static LocalGroup create(int size) {
    return create(size, CollectiveConfig.defaults(), UnaryOperator.identity());
  }

  /** {@code size} ranks; {@code wrap} may decorate each rank's transport (e.g. with fault injection). */
  public static LocalGroup create(int size, CollectiveConfig config, UnaryOperator<Transport> wrap) {
    return create(size, config, wrap, new KryoObjectSerializer());
  }

  /** As above, with the serializer used by the object collectives. */
  public static LocalGroup create(
      int size, CollectiveConfig config, UnaryOperator<Transport> wrap, ObjectSerializer serializer) {
    LocalFabric fabric = new LocalFabric(size, config.segmentBytes(), NanoClock.SYSTEM);
    List<Communicator> list = new ArrayList<>(size);
    for (int r = 0; r < size; r++) {
      list.add(new EngineCommunicator(wrap.apply(fabric.endpoint(r)), config, serializer));
    }
    return new LocalGroup(fabric, Collections.unmodifiableList(list));
  }

  public int size() {
    return communicators.size();
  }

  public Communicator communicator(int rank) {
    return communicators.get(rank);
  }

  public List<Communicator> communicators() {
    return communicators;
  }

  /** The code one rank runs in {@link #run}. */
  @FunctionalInterface
  public interface RankTask<T> {
    T run(Communicator comm) throws Exception;
  }

  /**
   * Runs {@code task} for every rank, each on its own thread ({@code rank-r}), and returns the results in
   * rank order. If a rank's task throws, the group is closed so the other ranks fail at once instead of
   * waiting for their timeout, and the first failure (in time) is rethrown with the others suppressed.
   */
  public <T> List<T> run(RankTask<T> task) throws InterruptedException {
    int n = communicators.size();
    List<T> results = new ArrayList<>(Collections.nCopies(n, null));
    List<Throwable> failures = new ArrayList<>();
    Thread[] threads = new Thread[n];
    for (int r = 0; r < n; r++) {
      int rank = r;
      threads[r] = new Thread(() -> {
        try {
          T value = task.run(communicators.get(rank));
          synchronized (results) {
            results.set(rank, value);
          }
        } catch (Throwable t) {
          synchronized (failures) {
            failures.add(t);
          }
          communicators.forEach(c -> {
            try {
              c.close();
            } catch (RuntimeException ignored) {
              // Closing is only to release the other ranks; the failure above is what counts.
            }
          });
        }
      }, "rank-" + r);
      threads[r].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    // The failure that came first is the cause; the others are usually the release it triggered.
    RuntimeException first = null;
    for (Throwable t : failures) {
      if (first == null) {
        first = t instanceof RuntimeException ? (RuntimeException) t : new IllegalStateException(t.toString(), t);
      } else if (first != t) {
        first.addSuppressed(t);
      }
    }
    if (first != null) {
      throw first;
    }
    return results;
  }

  /** Closes every rank's communicator. */
  public void close() {
    for (Communicator c : communicators) {
      c.close();
    }
  }

  /** The fabric (tests inspect its frame pool for leaks). */
  public LocalFabric fabric() {
    return fabric;
  }
}
