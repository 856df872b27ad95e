package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.EngineCommunicator;
import io.sparkcollective.core.serialization.KryoObjectSerializer;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.ForwardingTransport;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.Transport;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The chain steps of the ring's all-gather and of the pipelined broadcast pass a segment received over a socket on
 * as it came (restamped), instead of copying the range out of the vector into another frame: the frame a rank
 * sends at such a step is the very frame it received, still held (never released in between). Results stay
 * exact: the sums against a reference, a broadcast's every bit pattern (NaN payloads included). Where the wire is
 * narrower than the vector's elements (bfloat16 for floats), nothing is passed on as it came.
 */
@Timeout(120)
class SegmentForwardingTest {
  private static final Duration LIMIT = Duration.ofSeconds(60);
  private static final int N = 3;
  /** Floats per segment (the smallest segment allowed, so that every chunk takes several). */
  private static final int SEGMENT = 1024;

  /** Counts, per step, the frames a rank sent and how many of them were frames it had received and still held. */
  private static final class ForwardTap extends ForwardingTransport {
    private final Set<Frame> held = Collections.newSetFromMap(new IdentityHashMap<>());
    final Map<Integer, AtomicInteger> sent = new java.util.concurrent.ConcurrentHashMap<>();
    final Map<Integer, AtomicInteger> forwarded = new java.util.concurrent.ConcurrentHashMap<>();

    ForwardTap(Transport delegate) {
      super(delegate);
    }

    @Override
    public Frame receive(int peer, int stream, long seq, long deadlineNanos) {
      Frame f = super.receive(peer, stream, seq, deadlineNanos);
      if (f != null) {
        synchronized (held) {
          held.add(f);
        }
      }
      return f;
    }

    @Override
    public void release(Frame frame) {
      synchronized (held) {
        held.remove(frame);
      }
      super.release(frame);
    }

    @Override
    public void send(int peer, Frame frame) {
      boolean wasReceived;
      synchronized (held) {
        wasReceived = held.remove(frame);
      }
      sent.computeIfAbsent(frame.step(), s -> new AtomicInteger()).incrementAndGet();
      if (wasReceived) {
        forwarded.computeIfAbsent(frame.step(), s -> new AtomicInteger()).incrementAndGet();
      }
      super.send(peer, frame);
    }

    int sentAt(int step) {
      AtomicInteger c = sent.get(step);
      return c == null ? 0 : c.get();
    }

    int forwardedAt(int step) {
      AtomicInteger c = forwarded.get(step);
      return c == null ? 0 : c.get();
    }

    int forwardedTotal() {
      return forwarded.values().stream().mapToInt(AtomicInteger::get).sum();
    }
  }

  private static CollectiveConfig config() {
    return CollectiveConfig.from(Map.of(CollectiveConfig.SHARED_MEMORY_BYTES, "0",
        CollectiveConfig.SEGMENT_BYTES, String.valueOf(SEGMENT * Float.BYTES),
        CollectiveConfig.BROADCAST_CHAIN_MIN_BYTES, "1", CollectiveConfig.JOIN_TIMEOUT_MS, "10000"));
  }

  /** Runs {@code body} on every rank of a 3-rank TCP group whose transports are tapped; returns the taps. */
  private static List<ForwardTap> run(String group, Function<EngineCommunicator, Void> body) throws Exception {
    CollectiveConfig config = config();
    List<ForwardTap> taps = new ArrayList<>(Collections.nCopies(N, null));
    try (TcpCluster cluster = new TcpCluster(N, config)) {
      List<InetSocketAddress> peers = cluster.addresses();
      GroupHarness.runRanks(N, LIMIT, r -> {
        ForwardTap tap = new ForwardTap(cluster.endpoint(r).join(group, r, peers));
        taps.set(r, tap);
        try (EngineCommunicator comm = new EngineCommunicator(tap, config, new KryoObjectSerializer())) {
          body.apply(comm);
        }
        return null;
      }).forEach(o -> assertEquals(null, o.error));
    }
    return taps;
  }

  @Test
  void shouldPassTheRingsAllGatherSegmentsOnAsTheyCame() throws Exception {
    int len = 3 * 3 * SEGMENT + 5; // chunks of 3073-3074 floats: 4 segments each
    List<float[]> results = new ArrayList<>(Collections.nCopies(N, null));
    List<ForwardTap> taps = run("forward-ring", comm -> {
      int r = comm.rank();
      float[] v = new float[len];
      for (int i = 0; i < len; i++) {
        v[i] = (i % 1000) * (r + 1);
      }
      comm.allReduce(DataBuffer.of(v), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING));
      results.set(r, v);
      return null;
    });
    for (int r = 0; r < N; r++) {
      float[] v = results.get(r);
      for (int i = 0; i < len; i++) {
        assertEquals((i % 1000) * 6f, v[i], "rank " + r + " element " + i);
      }
      ForwardTap tap = taps.get(r);
      // One pass of 2(N-1) = 4 steps: the reduce-scatter sends at steps 0-2 (step 2 is the first all-gather step,
      // the finished chunk), the all-gather passes on at step 3 what it received at step 2.
      assertEquals(4, tap.sentAt(3), "rank " + r + ": segments sent at the all-gather's chain step");
      assertEquals(tap.sentAt(3), tap.forwardedAt(3), "rank " + r + ": every one passed on as it came");
      assertEquals(tap.forwardedAt(3), tap.forwardedTotal(), "rank " + r + ": nothing else passed on");
    }
  }

  @Test
  void shouldPassABroadcastsSegmentsOnBitForBit() throws Exception {
    int len = 5 * SEGMENT + 17;
    float[] source = new float[len];
    Random random = new Random(42);
    for (int i = 0; i < len; i++) {
      source[i] = Float.intBitsToFloat(random.nextInt()); // every pattern: NaN payloads, -0, subnormals
    }
    source[0] = Float.intBitsToFloat(0x7fa00001); // a signalling NaN
    List<float[]> results = new ArrayList<>(Collections.nCopies(N, null));
    List<ForwardTap> taps = run("forward-broadcast", comm -> {
      float[] v = comm.rank() == 0 ? source.clone() : new float[len];
      comm.broadcast(DataBuffer.of(v), 0);
      results.set(comm.rank(), v);
      return null;
    });
    for (int r = 0; r < N; r++) {
      float[] v = results.get(r);
      for (int i = 0; i < len; i++) {
        assertEquals(Float.floatToRawIntBits(source[i]), Float.floatToRawIntBits(v[i]), "rank " + r + " element "
            + i);
      }
    }
    // The chain is 0 -> 1 -> 2: rank 1 passes on each of the 6 segments as it came; the root and the last send
    // nothing received.
    assertEquals(6, taps.get(1).sentAt(0));
    assertEquals(6, taps.get(1).forwardedTotal());
    assertEquals(0, taps.get(0).forwardedTotal());
    assertEquals(0, taps.get(2).sentAt(0));
  }

  @Test
  void shouldCopyWhereTheWireIsNarrowerThanTheElements() throws Exception {
    int len = 3 * 3 * SEGMENT + 5;
    List<float[]> results = new ArrayList<>(Collections.nCopies(N, null));
    List<ForwardTap> taps = run("forward-bf16", comm -> {
      int r = comm.rank();
      float[] v = new float[len];
      for (int i = 0; i < len; i++) {
        v[i] = (i % 16) * (r + 1); // small integers: exact in bfloat16
      }
      comm.allReduce(DataBuffer.of(v), ReduceOp.SUM,
          CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING).withWireType(DType.BF16));
      results.set(r, v);
      return null;
    });
    for (int r = 0; r < N; r++) {
      float[] v = results.get(r);
      for (int i = 0; i < len; i++) {
        assertEquals((i % 16) * 6f, v[i], "rank " + r + " element " + i);
      }
      assertTrue(taps.get(r).sentAt(3) > 0, "rank " + r + " sent at the all-gather's chain step");
      assertEquals(0, taps.get(r).forwardedTotal(), "rank " + r + ": a narrower wire copies");
    }
  }
}
