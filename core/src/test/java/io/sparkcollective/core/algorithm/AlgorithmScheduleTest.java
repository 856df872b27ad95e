package io.sparkcollective.core.algorithm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every algorithm over recording links (no transport, no engine): one thread per rank, segments handed over
 * in first-in first-out order per pair of ranks, each receive checked against what was sent (step, offset,
 * length), as the real links do. The recording shows the schedule: the bytes each rank sends (2(N-1)/N of the
 * vector for ring and halving-doubling), the steps used against the count each algorithm states (which the
 * hierarchical algorithm relies on to compose any inner one), and the result against a sequential sum.
 */
@Timeout(60)
class AlgorithmScheduleTest {

  /** One segment in flight from one rank to another. */
  private static final class Segment {
    final int step;
    final int off;
    final float[] values;

    Segment(int step, int off, float[] values) {
      this.step = step;
      this.off = off;
      this.values = values;
    }
  }

  /** A group of recording links over one JVM; {@code queues[to][from]} in send order. */
  private static final class Wire {
    final int size;
    final int segment;
    final BlockingQueue<Segment>[][] queues;

    @SuppressWarnings("unchecked")
    Wire(int size, int segment) {
      this.size = size;
      this.segment = segment;
      this.queues = new BlockingQueue[size][size];
      for (int to = 0; to < size; to++) {
        for (int from = 0; from < size; from++) {
          queues[to][from] = new ArrayBlockingQueue<>(1 << 16);
        }
      }
    }
  }

  /** One rank's links: its vector, what it sent and the steps it used. */
  private static final class RecordingLinks implements Links {
    final Wire wire;
    final int rank;
    final float[] v;
    float[] stash;
    long elementsSent;
    long maxStep = -1;
    final List<String> schedule = new ArrayList<>();

    RecordingLinks(Wire wire, int rank, float[] v) {
      this.wire = wire;
      this.rank = rank;
      this.v = v;
    }

    @Override
    public int rank() {
      return rank;
    }

    @Override
    public int size() {
      return wire.size;
    }

    @Override
    public int length() {
      return v.length;
    }

    @Override
    public int segmentElements() {
      return wire.segment;
    }

    private void used(int step) {
      assertTrue(step >= 0, "negative step " + step);
      maxStep = Math.max(maxStep, step);
    }

    @Override
    public void send(int peer, int step, int off, int n) {
      used(step);
      schedule.add("send " + peer + " step " + step + " [" + off + "+" + n + ")");
      int segments = segmentsOf(n);
      for (int k = 0; k < segments; k++) {
        int so = off + k * wire.segment;
        int sn = Math.min(wire.segment, n - k * wire.segment);
        float[] copy = java.util.Arrays.copyOfRange(v, so, so + sn);
        elementsSent += sn;
        wire.queues[peer][rank].add(new Segment(step, so, copy));
      }
    }

    private void receive(int peer, int step, int off, int n, boolean reduce) {
      used(step);
      schedule.add((reduce ? "reduce " : "copy ") + peer + " step " + step + " [" + off + "+" + n + ")");
      int segments = segmentsOf(n);
      for (int k = 0; k < segments; k++) {
        int so = off + k * wire.segment;
        int sn = Math.min(wire.segment, n - k * wire.segment);
        Segment s;
        try {
          s = wire.queues[rank][peer].poll(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
        if (s == null) {
          throw new AssertionError("rank " + rank + " waited in vain for rank " + peer + " at step " + step);
        }
        if (s.step != step || s.off != so || s.values.length != sn) {
          throw new AssertionError("rank " + rank + " expected step " + step + " [" + so + "+" + sn + ") from "
              + peer + " but got step " + s.step + " [" + s.off + "+" + s.values.length + ")");
        }
        for (int i = 0; i < sn; i++) {
          v[so + i] = reduce ? v[so + i] + s.values[i] : s.values[i];
        }
      }
    }

    @Override
    public void recvReduce(int peer, int step, int off, int n) {
      receive(peer, step, off, n, true);
    }

    @Override
    public void recvCopy(int peer, int step, int off, int n) {
      receive(peer, step, off, n, false);
    }

    @Override
    public void stash(int off, int n) {
      stash = java.util.Arrays.copyOfRange(v, off, off + n);
    }

    @Override
    public void copyFromStash(int off, int n) {
      System.arraycopy(stash, 0, v, off, n);
    }

    @Override
    public void reduceFromStash(int off, int n) {
      for (int i = 0; i < n; i++) {
        v[off + i] += stash[i];
      }
    }
  }

  /** Runs {@code a} on {@code n} ranks over a vector of {@code len}; checks the sum; returns every rank's links. */
  private static RecordingLinks[] run(AllReduceAlgorithm a, int n, int len, int segment) throws Exception {
    Wire wire = new Wire(n, segment);
    RecordingLinks[] links = new RecordingLinks[n];
    float[] expected = new float[len];
    for (int r = 0; r < n; r++) {
      float[] v = new float[len];
      for (int i = 0; i < len; i++) {
        v[i] = (r * 31 + i * 7) % 13 - 6; // small integers: every order of summing gives the same bits
        expected[i] += v[i];
      }
      links[r] = new RecordingLinks(wire, r, v);
    }
    AtomicReference<Throwable> failed = new AtomicReference<>();
    Thread[] threads = new Thread[n];
    for (int r = 0; r < n; r++) {
      RecordingLinks l = links[r];
      threads[r] = new Thread(() -> {
        try {
          a.allReduce(l);
        } catch (Throwable t) {
          failed.compareAndSet(null, t);
        }
      }, "rank-" + r);
      threads[r].start();
    }
    for (Thread t : threads) {
      t.join(30_000);
    }
    if (failed.get() != null) {
      throw new AssertionError(a.getClass().getSimpleName() + " on " + n + " ranks, " + len + " elements",
          failed.get());
    }
    for (int r = 0; r < n; r++) {
      assertArrayEquals(expected, links[r].v, "rank " + r + " of " + n + ", " + len + " elements");
      for (int to = 0; to < n; to++) {
        assertEquals(0, wire.queues[to][r].size(), "segments from " + r + " to " + to + " left unread");
      }
    }
    return links;
  }

  @ParameterizedTest(name = "{0} ranks, {1} elements, segments of {2}")
  @CsvSource({"2, 4096, 256", "3, 3000, 128", "4, 4096, 64", "5, 1000, 64", "8, 8192, 128", "16, 16384, 256",
      "4, 40960, 64"})
  void shouldSendTwoNMinusOneOverNOfTheVectorAndUseTheStepsTheRingStates(int n, int len, int seg) throws Exception {
    RecordingLinks[] links = run(RingAllReduce.INSTANCE, n, len, seg);
    long steps = RingAllReduce.INSTANCE.steps(n, len, seg);
    for (RecordingLinks l : links) {
      // Rank r sends every chunk but its own in the reduce-scatter and every chunk but r+1's in the all-gather.
      assertEquals(2L * (n - 1) * len / n, l.elementsSent, "rank " + l.rank + " sent");
      assertEquals(steps, l.maxStep + 1, "rank " + l.rank + " uses every step the ring states, no more");
    }
    if (len > RingAllReduce.INSTANCE.passElements(n, seg)) {
      assertTrue(steps > 2L * (n - 1), "a vector longer than a pass takes several passes");
    }
  }

  @ParameterizedTest(name = "{0} ranks, {1} elements")
  @CsvSource({"2, 4096", "4, 4096", "8, 8192", "16, 16384"})
  void shouldSendTwoNMinusOneOverNOfTheVectorInHalvingDoubling(int n, int len) throws Exception {
    RecordingLinks[] links = run(HalvingDoublingAllReduce.INSTANCE, n, len, 256);
    for (RecordingLinks l : links) {
      assertEquals(2L * (n - 1) * len / n, l.elementsSent, "rank " + l.rank + " sent");
      assertEquals(HalvingDoublingAllReduce.INSTANCE.steps(n, len, 256), l.maxStep + 2,
          "a power of two uses every step but the unfold");
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @CsvSource({"3", "5", "6", "7", "12"})
  void shouldStayWithinTheStatedStepsForOtherSizes(int n) throws Exception {
    for (AllReduceAlgorithm a : new AllReduceAlgorithm[] {HalvingDoublingAllReduce.INSTANCE, DirectAllReduce.INSTANCE,
        RingAllReduce.INSTANCE}) {
      RecordingLinks[] links = run(a, n, 1001, 64);
      for (RecordingLinks l : links) {
        assertTrue(l.maxStep < a.steps(n, 1001, 64), a.getClass().getSimpleName() + " rank " + l.rank
            + " used step " + l.maxStep + ", stated " + a.steps(n, 1001, 64));
      }
    }
  }

  /** Rows of a ranks, columns of b: every rank still sends 2(N-1)/N of the vector, in 2(a-1) + 2(b-1) steps. */
  @ParameterizedTest(name = "{0} ranks, {1} elements, segments of {2}")
  @CsvSource({"4, 4096, 64", "6, 6000, 64", "9, 9000, 128", "12, 12000, 32", "16, 16384, 256", "8, 80000, 16",
      "7, 700, 64"})
  void shouldSendTwoNMinusOneOverNOfTheVectorInFewerStepsInTwoDimensions(int n, int len, int seg) throws Exception {
    TwoDimensionalRingAllReduce a = TwoDimensionalRingAllReduce.INSTANCE;
    RecordingLinks[] links = run(a, n, len, seg);
    int rows = TwoDimensionalRingAllReduce.rowSize(n);
    long pieces = Math.max(1, (len + a.passElements(n, seg) - 1) / a.passElements(n, seg));
    long steps = rows == 0 ? RingAllReduce.INSTANCE.steps(n, len, seg)
        : pieces * (2L * (rows - 1) + 2L * (n / rows - 1));
    assertEquals(steps, a.steps(n, len, seg));
    for (RecordingLinks l : links) {
      assertEquals(2L * (n - 1) * len / n, l.elementsSent, "rank " + l.rank + " sent");
      assertEquals(steps, l.maxStep + 1, "rank " + l.rank + " uses every step it states, no more");
    }
    if (rows > 0 && pieces == 1) {
      assertTrue(steps < 2L * (n - 1), "fewer steps than the ring's");
    }
  }

  @Test
  void shouldSendTheWholeVectorToEveryPeerInOneStepDirectly() throws Exception {
    int n = 5;
    RecordingLinks[] links = run(DirectAllReduce.INSTANCE, n, 777, 100);
    for (RecordingLinks l : links) {
      assertEquals((long) (n - 1) * 777, l.elementsSent);
      assertEquals(0, l.maxStep);
    }
  }

  @ParameterizedTest(name = "inner {0}, placement {1}, {2} elements")
  @CsvSource({"RING, 0 0 1 1, 4096", "RING, 0 0 1 1 2 2, 100000", "HALVING_DOUBLING, 0 0 1 1 2 2 3 3, 5000",
      "DIRECT, 0 1 0 1, 999", "RING, 0 0 0 1, 3000", "HALVING_DOUBLING, 0 0 1, 64"})
  void shouldComposeAnyInnerAlgorithmWithinTheStepsItStates(String inner, String placement, int len)
      throws Exception {
    String[] p = placement.split(" ");
    int[] nodes = new int[p.length];
    for (int r = 0; r < p.length; r++) {
      nodes[r] = Integer.parseInt(p[r]);
    }
    AllReduceAlgorithm in = AlgorithmSelector.implementation(io.sparkcollective.core.api.Algorithm.valueOf(inner));
    HierarchicalAllReduce h = new HierarchicalAllReduce(Placement.of(nodes), in);
    // Segments of 64 elements: long vectors take many pieces, each with its own window of steps.
    RecordingLinks[] links = run(h, nodes.length, len, 64);
    for (RecordingLinks l : links) {
      assertTrue(l.maxStep < h.steps(nodes.length, len, 64), "rank " + l.rank + " used step " + l.maxStep);
    }
  }
}
