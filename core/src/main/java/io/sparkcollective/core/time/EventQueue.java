package io.sparkcollective.core.time;

import java.util.Arrays;

/**
 * Future events in virtual time, earliest first (the network simulator's, the cost model's walk of folded
 * groups); events at the same time in the order they were added, so a run is deterministic. A binary heap over
 * parallel primitive arrays: tens of millions of events per run, none of them an object. Each event is a time,
 * a kind and a reference, whose meaning is the user's.
 */
public final class EventQueue {
  private double[] time = new double[1024];
  private long[] order = new long[1024];
  private int[] kind = new int[1024];
  private long[] ref = new long[1024];
  private int size;
  private long added;

  public boolean isEmpty() {
    return size == 0;
  }

  /** Time of the earliest event; only when not empty. */
  public double peekTime() {
    return time[0];
  }

  /** Kind of the earliest event. */
  public int peekKind() {
    return kind[0];
  }

  /** Reference of the earliest event. */
  public long peekRef() {
    return ref[0];
  }

  public void add(double t, int k, long r) {
    if (size == time.length) {
      int n = size * 2;
      time = Arrays.copyOf(time, n);
      order = Arrays.copyOf(order, n);
      kind = Arrays.copyOf(kind, n);
      ref = Arrays.copyOf(ref, n);
    }
    long o = added++;
    int i = size++;
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      if (!before(t, o, parent)) {
        break;
      }
      set(i, parent);
      i = parent;
    }
    time[i] = t;
    order[i] = o;
    kind[i] = k;
    ref[i] = r;
  }

  /** Removes the earliest event (read it first with the peek methods). */
  public void poll() {
    int last = --size;
    if (last == 0) {
      return;
    }
    double t = time[last];
    long o = order[last];
    int k = kind[last];
    long r = ref[last];
    int i = 0;
    int half = last >>> 1;
    while (i < half) {
      int child = 2 * i + 1;
      int right = child + 1;
      if (right < last && earlier(right, child)) {
        child = right;
      }
      if (!before(time[child], order[child], t, o)) {
        break;
      }
      set(i, child);
      i = child;
    }
    time[i] = t;
    order[i] = o;
    kind[i] = k;
    ref[i] = r;
  }

  /** Events added so far. */
  public long added() {
    return added;
  }

  /** Whether an event at {@code t} added {@code o}-th comes before one at {@code u} added {@code p}-th. */
  private static boolean before(double t, long o, double u, long p) {
    return t < u || (t == u && o < p);
  }

  private boolean before(double t, long o, int j) {
    return before(t, o, time[j], order[j]);
  }

  private boolean earlier(int a, int b) {
    return before(time[a], order[a], time[b], order[b]);
  }

  private void set(int to, int from) {
    time[to] = time[from];
    order[to] = order[from];
    kind[to] = kind[from];
    ref[to] = ref[from];
  }
}
