package io.sparkcollective.core.testing;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.engine.LocalGroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Runs one thread per rank of a group and collects what each rank returned or threw. {@link #run}
 * rethrows the first failure (the others attached as suppressed); {@link #runAll} returns every outcome so
 * tests can assert that all ranks failed. A run that outlives its limit fails with the ranks' stacks.
 */
public final class GroupHarness {
  private GroupHarness() {}

  /** The code one rank runs. */
  @FunctionalInterface
  public interface RankBody<T> {
    T run(Communicator comm) throws Exception;
  }

  /** What one rank returned or threw, and when it finished (ms after the start). */
  public static final class Outcome<T> {
    public final int rank;
    public final T value;
    public final Throwable error;
    public final long elapsedMs;

    Outcome(int rank, T value, Throwable error, long elapsedMs) {
      this.rank = rank;
      this.value = value;
      this.error = error;
      this.elapsedMs = elapsedMs;
    }

    @Override
    public String toString() {
      return "rank " + rank + (error == null ? " -> " + value : " threw " + error) + " after " + elapsedMs + " ms";
    }
  }

  /** Runs {@code body} on every rank; returns the ranks' values in rank order or throws the first failure. */
  public static <T> List<T> run(LocalGroup group, Duration limit, RankBody<T> body) {
    return run(group.communicators(), limit, body);
  }

  /** As {@link #run(LocalGroup, Duration, RankBody)} for any list of communicators, one per rank. */
  public static <T> List<T> run(List<Communicator> group, Duration limit, RankBody<T> body) {
    List<Outcome<T>> outcomes = runAll(group, limit, body);
    AssertionError failure = null;
    List<T> values = new ArrayList<>();
    for (Outcome<T> o : outcomes) {
      if (o.error != null) {
        if (failure == null) {
          failure = new AssertionError("rank " + o.rank + " failed: " + o.error, o.error);
        } else {
          failure.addSuppressed(o.error);
        }
      }
      values.add(o.value);
    }
    if (failure != null) {
      throw failure;
    }
    return values;
  }

  /** Runs {@code body} on every rank and returns each rank's outcome. */
  public static <T> List<Outcome<T>> runAll(LocalGroup group, Duration limit, RankBody<T> body) {
    return runAll(group.communicators(), limit, body);
  }

  /** As {@link #runAll(LocalGroup, Duration, RankBody)} for any list of communicators, one per rank. */
  public static <T> List<Outcome<T>> runAll(List<Communicator> group, Duration limit, RankBody<T> body) {
    return runRanks(group.size(), limit, rank -> body.run(group.get(rank)));
  }

  /** The code one rank runs before it has a communicator (e.g. while joining a group): it gets its rank. */
  @FunctionalInterface
  public interface RankIndexBody<T> {
    T run(int rank) throws Exception;
  }

  /** Runs {@code body} for ranks 0 to {@code n - 1}, each on its own thread, and returns every outcome. */
  public static <T> List<Outcome<T>> runRanks(int n, Duration limit, RankIndexBody<T> body) {
    List<Outcome<T>> outcomes = new ArrayList<>();
    Thread[] threads = new Thread[n];
    @SuppressWarnings({"unchecked", "rawtypes"})
    Outcome<T>[] slots = new Outcome[n];
    long start = System.nanoTime();
    for (int r = 0; r < n; r++) {
      int rank = r;
      threads[r] = new Thread(() -> {
        T value = null;
        Throwable error = null;
        try {
          value = body.run(rank);
        } catch (Throwable t) {
          error = t;
        }
        slots[rank] = new Outcome<>(rank, value, error, (System.nanoTime() - start) / 1_000_000);
      }, "rank-" + r);
      threads[r].setDaemon(true);
      threads[r].start();
    }
    long deadline = start + limit.toNanos();
    for (Thread t : threads) {
      long left = deadline - System.nanoTime();
      try {
        t.join(Math.max(1, left / 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
    StringBuilder hung = new StringBuilder();
    for (Thread t : threads) {
      if (t.isAlive()) {
        hung.append('\n').append(t.getName()).append(" still running:");
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
          if (e.getKey() == t) {
            for (StackTraceElement el : e.getValue()) {
              hung.append("\n    at ").append(el);
            }
          }
        }
      }
    }
    if (hung.length() > 0) {
      for (Thread t : threads) {
        t.interrupt();
      }
      throw new AssertionError("group did not finish within " + limit + ":" + hung);
    }
    for (int r = 0; r < n; r++) {
      outcomes.add(slots[r]);
    }
    return outcomes;
  }

  /** Closes every communicator of the group, failing if any close throws. */
  public static void closeAll(LocalGroup group) {
    closeAll(group.communicators());
  }

  /** Closes every communicator of the list, failing if any close throws. */
  public static void closeAll(List<Communicator> group) {
    AssertionError failure = null;
    for (Communicator c : group) {
      try {
        c.close();
      } catch (RuntimeException e) {
        if (failure == null) {
          failure = new AssertionError("close of rank " + c.rank() + " failed", e);
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}
