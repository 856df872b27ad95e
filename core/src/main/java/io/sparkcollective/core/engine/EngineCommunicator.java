package io.sparkcollective.core.engine;

import io.sparkcollective.core.algorithm.AlgorithmChoice;
import io.sparkcollective.core.algorithm.AlgorithmSelector;
import io.sparkcollective.core.algorithm.AllReduceAlgorithm;
import io.sparkcollective.core.algorithm.AllReduceCostModel;
import io.sparkcollective.core.algorithm.BroadcastAlgorithms;
import io.sparkcollective.core.algorithm.DisseminationBarrier;
import io.sparkcollective.core.algorithm.LinkProbe;
import io.sparkcollective.core.algorithm.Partition;
import io.sparkcollective.core.algorithm.Placement;
import io.sparkcollective.core.algorithm.RecursiveDoublingAllReduce;
import io.sparkcollective.core.algorithm.RingCollectives;
import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.Blocks;
import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveKind;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ObjectSerializer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.kernel.Elements;
import io.sparkcollective.core.transport.Transport;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Communicator} of one rank over any {@link Transport}: validates calls, numbers them per tag,
 * picks the algorithm, runs it through an {@link OpContext}, and turns any failure into the group's
 * failure (kept by the transport, which tells the peers).
 *
 * <p>Threading: blocking operations run on the caller's thread; async ones on one thread per
 * communicator, in call order. Operations on different tags may run concurrently; each holds its own
 * {@link OpContext}.
 */
public final class EngineCommunicator implements ManagedCommunicator {
  private static final Logger LOG = LoggerFactory.getLogger(EngineCommunicator.class);
  private static final Runnable NOTHING = () -> { };
  /** The stream of the group's own operations (the link probe), after the users' collective and point-to-point. */
  private static final int OWN_STREAM = 2 * CollectiveOptions.MAX_TAGS;
  /**
   * Repetitions of the link probe's exchanges (the fastest of each is kept): round trips of one element, fans of
   * one element, round trips of one segment. On six processes of two cores the fastest of 3 small round trips
   * still took milliseconds (others' turns on the cores, the first calls' cold code), of 64 tens of microseconds.
   */
  private static final int PROBE_ROUND_TRIPS = 64;
  private static final int PROBE_FANS = 32;
  private static final int PROBE_LARGE_ROUND_TRIPS = 4;
  /**
   * A tag's call that follows a measured link from this count on takes a second measurement, made then, with the
   * code warm: the first calls of fresh JVMs measure their cold code (six processes on two cores, each its own
   * emulated host at 1 Gbit/s: 290-410 us of latency and 450-590 Mbit/s at the first call, where warm round trips
   * of one element take tens of microseconds).
   */
  static final long REMEASURE_AFTER_CALLS = 1000;

  private final Transport transport;
  private final CollectiveConfig config;
  private final ObjectSerializer serializer;
  private final Cancellation cancellation;
  /** Segment size of this group's messages: the same on every rank (see {@link Transport#socketsOnly}). */
  private final int segmentBytes;
  private final AlgorithmSelector selector;
  /**
   * The selectors on the links measured so far (see {@link #measuredSelector}): the first for a tag's calls before
   * its {@link #REMEASURE_AFTER_CALLS}-th that needs one, the second from it on; {@link #measurements} of them set.
   */
  private final AlgorithmSelector[] measured = new AlgorithmSelector[2];
  private volatile int measurements;
  /** Guards the measurements: the first call that needs one runs it, any other waits. */
  private final Object linkProbe = new Object();
  /** Per tag, the all-reduces so far that follow a measured link (their order is the same on every rank). */
  private final long[] measuredCalls = new long[CollectiveOptions.MAX_TAGS];
  /** The link measured last (null: not measured, or not to be). */
  private volatile AllReduceCostModel measuredLink;
  /** The next operation on the group's own stream (under {@link #linkProbe}). */
  private long ownSeq;
  /** Probes this group ran (a measurement may take figures from earlier groups instead). */
  private volatile int probes;
  /**
   * The figures the last group of this executor that measured agreed on: round trip, fan, round trip of one segment
   * (seconds) and that segment's bytes; null before any.
   */
  private static volatile double[] lastFigures;
  private final int rank;
  private final int size;
  /** Which ranks share a process (the hierarchical algorithm's and the selector's input). */
  private final Placement placement;
  private final long[] collectiveSeq = new long[CollectiveOptions.MAX_TAGS];
  private final long[] sendSeq;
  private final long[] recvSeq;
  private final ArrayDeque<OpContext> idleContexts = new ArrayDeque<>();
  private ThreadPoolExecutor asyncExecutor;
  private volatile OperationObserver observer = OperationObserver.NONE;
  private volatile boolean closed;

  public EngineCommunicator(Transport transport, CollectiveConfig config, ObjectSerializer serializer) {
    this(transport, config, serializer, Cancellation.NONE);
  }

  /**
   * A communicator whose waits also stop when {@code cancellation} fires (or the waiting thread is
   * interrupted): the call throws {@link CollectiveCancelledException} and the group is aborted.
   */
  public EngineCommunicator(Transport transport, CollectiveConfig config, ObjectSerializer serializer,
      Cancellation cancellation) {
    this.transport = transport;
    this.config = config;
    this.serializer = serializer;
    this.cancellation = cancellation;
    this.rank = transport.rank();
    this.size = transport.size();
    this.segmentBytes = Math.min(transport.maxFrameBytes(),
        transport.socketsOnly() ? config.segmentBytes() : config.localSegmentBytes());
    this.selector = AlgorithmSelector.of(config, transport.memoryToAll(), transport.oneHost(),
        segmentBytes);
    this.placement = Placement.of(transport.nodes());
    this.sendSeq = new long[size * CollectiveOptions.MAX_TAGS];
    this.recvSeq = new long[size * CollectiveOptions.MAX_TAGS];
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public void observe(OperationObserver observer) {
    this.observer = observer == null ? OperationObserver.NONE : observer;
  }

  @Override
  public io.sparkcollective.core.transport.LinkReceipts receipts() {
    return transport.receipts();
  }

  /** The link this group measured for AUTO, or null if it has not (or is not to: see {@link LinkProbe}). */
  public AllReduceCostModel measuredLink() {
    return measuredLink;
  }

  /** The transport underneath (for tests and the Spark layer's health reporting). */
  public Transport transport() {
    return transport;
  }

  // ------------------------------------------------------------------------------------------ all-reduce

  @Override
  public void allReduce(DataBuffer data, ReduceOp op, CollectiveOptions options) {
    allReduceCall(data, op, options).run();
  }

  @Override
  public CompletableFuture<Void> allReduceAsync(DataBuffer data, ReduceOp op, CollectiveOptions options) {
    return submit(allReduceCall(data, op, options));
  }

  private Runnable allReduceCall(DataBuffer data, ReduceOp op, CollectiveOptions options) {
    CollectiveKind kind = CollectiveKind.ALL_REDUCE;
    checkCall(kind, options);
    requireData(kind, data, "data");
    requireOp(kind, op);
    int tag = options.tag();
    long seq = nextSeq(tag, 1);
    if (size == 1) {
      return NOTHING;
    }
    DType wire = checkWire(kind, data, options);
    long timeoutMs = timeoutMs(options);
    // The algorithm is chosen by the bytes that cross the wire; where AUTO measures the link, by the measurement
    // this call's place among its tag's calls names, made when the call runs if it is not yet.
    long bytes = wireBytes(data, wire);
    Algorithm requested = options.algorithm();
    int generation = selector.measures(requested, placement) ? generation(tag) : -1;
    AlgorithmChoice known = generation < 0 ? selector.select(requested, bytes, placement) : null;
    return () -> {
      AlgorithmChoice choice = known != null ? known
          : measuredSelector(generation, tag, timeoutMs).select(requested, bytes, placement);
      allReduce(kind, tag, seq, data, wire, op, choice, timeoutMs);
    };
  }

  private void allReduce(CollectiveKind kind, int tag, long seq, DataBuffer data, DType wire, ReduceOp op,
      AlgorithmChoice choice, long timeoutMs) {
    int algorithmCode = choice.wireCode();
    execute(kind, seq, data.byteLength(), ctx -> {
      Elements el = Elements.openReduce(data, wire, ctx.scratch, 0);
      AllReduceAlgorithm algorithm = implementation(choice);
      if (algorithm.readsPeersInPlace()) {
        el.beginWireBeforeSharing();
      } else {
        el.beginWire();
      }
      ctx.begin(kind, tag, tag, seq, el, op, -1, algorithmCode, timeoutMs);
      algorithm.allReduce(ctx);
      // The owner of a block holds its F32 sum, the others the rounded copy they received: round both.
      el.endWire();
      if (op == ReduceOp.AVG) {
        el.divide(0, el.length(), size);
        el.roundToWire(0, el.length());
      }
      el.commit();
    });
  }

  /** Hierarchical all-reduces over this group's placement, one per inner algorithm, made on first use. */
  private final AllReduceAlgorithm[] hierarchical = new AllReduceAlgorithm[Algorithm.values().length];

  private AllReduceAlgorithm implementation(AlgorithmChoice choice) {
    if (choice.algorithm() != Algorithm.HIERARCHICAL) {
      return AlgorithmSelector.implementation(choice.algorithm());
    }
    synchronized (hierarchical) {
      AllReduceAlgorithm a = hierarchical[choice.inner().ordinal()];
      if (a == null) {
        a = AlgorithmSelector.implementation(choice, placement);
        hierarchical[choice.inner().ordinal()] = a;
      }
      return a;
    }
  }

  /** Which measurement a call on {@code tag} that follows a measured link takes (counted in call order). */
  private int generation(int tag) {
    synchronized (measuredCalls) {
      return measuredCalls[tag]++ < REMEASURE_AFTER_CALLS ? 0 : 1;
    }
  }

  /**
   * The selector on measurement {@code generation} of this group's link: made now by the first call that needs it
   * (on {@code tag}, with its timeout), with any measurement before it, on every rank of the group (the calls that
   * need them come in the same order on each tag of every rank, and measurements run one after another on the
   * group's own stream); later calls wait for it or take it.
   */
  private AlgorithmSelector measuredSelector(int generation, int tag, long timeoutMs) {
    if (measurements > generation) {
      return measured[generation];
    }
    synchronized (linkProbe) {
      while (measurements <= generation) {
        long start = System.nanoTime();
        AllReduceCostModel link = measureLink(tag, timeoutMs, measurements > 0);
        measured[measurements] = selector.measured(link);
        measuredLink = link;
        measurements++;
        LOG.info("rank {} of {}: measured the link between its {} processes in {} ms ({} probes): {} Mbit/s, {} us "
            + "latency, {} us of CPU per message", rank, size, placement.nodeCount(),
            (System.nanoTime() - start) / 1_000_000, probes,
            Math.round(link.linkBytesPerSecond() * 8 / 1e6),
            String.format(java.util.Locale.ROOT, "%.1f", link.latencySeconds() * 1e6),
            String.format(java.util.Locale.ROOT, "%.1f", link.overheadSeconds() * 1e6));
      }
      return measured[generation];
    }
  }

  /** Measurements of the link made so far (for tests). */
  int measurements() {
    return measurements;
  }

  /** Probes run so far (for tests). */
  int probes() {
    return probes;
  }

  /**
   * Runs the {@link LinkProbe} on the group's own stream: round trips of one element, fans of one element and round
   * trips of one segment between the first ranks of the processes, the fastest of each kept, then the slowest of
   * every rank's figures taken by all (an all-reduce of the times), from which every rank derives the same link.
   * The first measurement of a group whose every rank's executor has figures from an earlier group (the same
   * segment) takes the slowest of those instead, with one small all-reduce and no probe; a measurement
   * {@code again} always probes.
   */
  private AllReduceCostModel measureLink(int tag, long timeoutMs, boolean again) {
    int large = LinkProbe.largeElements(Math.max(1, segmentBytes / Float.BYTES), Float.BYTES);
    long largeBytes = (long) large * Float.BYTES;
    double[] seconds = null;
    if (!again) {
      double[] known = lastFigures;
      boolean have = known != null && known[3] == largeBytes;
      double[] figures = {have ? 0 : 1, have ? known[0] : 0, have ? known[1] : 0, have ? known[2] : 0};
      slowestOfGroup(figures, tag, timeoutMs);
      if (figures[0] == 0) {
        seconds = Arrays.copyOfRange(figures, 1, 4);
      }
    }
    if (seconds == null) {
      float[] vector = new float[large];
      // This rank's fastest round trip of one element, fan, round trip of one segment; then every rank's slowest.
      seconds = new double[] {probe(tag, timeoutMs, LinkProbe.roundTrip(placement), DataBuffer.of(vector, 0, 1),
          PROBE_ROUND_TRIPS), probe(tag, timeoutMs, LinkProbe.fan(placement), DataBuffer.of(vector, 0, 1),
          PROBE_FANS), probe(tag, timeoutMs, LinkProbe.roundTrip(placement), DataBuffer.of(vector),
          PROBE_LARGE_ROUND_TRIPS)};
      LOG.debug("rank {}: link probe: round trip {} us, fan {} us, round trip of {} bytes {} us", rank,
          seconds[0] * 1e6, seconds[1] * 1e6, largeBytes, seconds[2] * 1e6);
      slowestOfGroup(seconds, tag, timeoutMs);
      probes++;
    }
    lastFigures = new double[] {seconds[0], seconds[1], seconds[2], largeBytes};
    return LinkProbe.estimate(seconds[0], seconds[1], seconds[2], placement.nodeCount(), Float.BYTES, largeBytes,
        config.messageMicros(), segmentBytes);
  }

  /** Replaces {@code figures} with the largest of every rank's, on the group's own stream. */
  private void slowestOfGroup(double[] figures, int tag, long timeoutMs) {
    execute(CollectiveKind.LINK_PROBE, ownSeq, ctx -> {
      Elements el = Elements.openReduce(DataBuffer.of(figures), null, ctx.scratch, 0);
      el.beginWire();
      ctx.begin(CollectiveKind.LINK_PROBE, tag, OWN_STREAM, ownSeq, el, ReduceOp.MAX, -1, 0, timeoutMs);
      RecursiveDoublingAllReduce.INSTANCE.allReduce(ctx);
      el.endWire();
      el.commit();
    });
    ownSeq++;
  }

  /** The fastest of {@code rounds} runs of {@code exchange} on {@code data}, in seconds (each an operation). */
  private double probe(int tag, long timeoutMs, AllReduceAlgorithm exchange, DataBuffer data, int rounds) {
    double fastest = Double.MAX_VALUE;
    for (int round = 0; round < rounds; round++) {
      long start = System.nanoTime();
      execute(CollectiveKind.LINK_PROBE, ownSeq, ctx -> {
        ctx.begin(CollectiveKind.LINK_PROBE, tag, OWN_STREAM, ownSeq, Elements.openForCopy(data, ctx.scratch, 0),
            null, -1, 0, timeoutMs);
        exchange.allReduce(ctx);
      });
      ownSeq++;
      fastest = Math.min(fastest, (System.nanoTime() - start) * 1e-9);
    }
    return fastest;
  }

  // -------------------------------------------------------------------------------------- reduce-scatter

  @Override
  public void reduceScatter(DataBuffer data, ReduceOp op, CollectiveOptions options) {
    reduceScatterCall(data, op, options).run();
  }

  @Override
  public CompletableFuture<Void> reduceScatterAsync(DataBuffer data, ReduceOp op, CollectiveOptions options) {
    return submit(reduceScatterCall(data, op, options));
  }

  private Runnable reduceScatterCall(DataBuffer data, ReduceOp op, CollectiveOptions options) {
    CollectiveKind kind = CollectiveKind.REDUCE_SCATTER;
    checkCall(kind, options);
    requireData(kind, data, "data");
    requireOp(kind, op);
    int tag = options.tag();
    long seq = nextSeq(tag, 1);
    if (size == 1) {
      return NOTHING;
    }
    DType wire = checkWire(kind, data, options);
    long timeoutMs = timeoutMs(options);
    return () -> execute(kind, seq, data.byteLength(), ctx -> {
      Elements el = Elements.openReduce(data, wire, ctx.scratch, 0);
      el.beginWire();
      ctx.begin(kind, tag, tag, seq, el, op, -1, 0, timeoutMs);
      RingCollectives.reduceScatter(ctx, Partition.even(el.length(), size));
      el.endWire();
      if (op == ReduceOp.AVG) {
        int own = Blocks.offset(el.length(), size, rank);
        int ownLength = Blocks.length(el.length(), size, rank);
        el.divide(own, ownLength, size);
        el.roundToWire(own, ownLength);
      }
      el.commit();
    });
  }

  // ---------------------------------------------------------------------------------------- all-gather

  @Override
  public void allGather(DataBuffer send, DataBuffer recv, CollectiveOptions options) {
    allGatherCall(send, recv, options).run();
  }

  @Override
  public CompletableFuture<Void> allGatherAsync(DataBuffer send, DataBuffer recv, CollectiveOptions options) {
    return submit(allGatherCall(send, recv, options));
  }

  private Runnable allGatherCall(DataBuffer send, DataBuffer recv, CollectiveOptions options) {
    CollectiveKind kind = CollectiveKind.ALL_GATHER;
    checkCall(kind, options);
    requireData(kind, send, "send");
    requireData(kind, recv, "recv");
    if (send.dtype() != recv.dtype()) {
      throw usage(kind, "send is " + send.dtype() + " but recv is " + recv.dtype());
    }
    if ((long) send.length() * size != recv.length()) {
      throw usage(kind, "recv holds " + recv.length() + " elements but must hold size (" + size + ") x send ("
          + send.length() + ") = " + (long) send.length() * size);
    }
    int tag = options.tag();
    long seq = nextSeq(tag, 1);
    long timeoutMs = timeoutMs(options);
    return () -> execute(kind, seq, recv.byteLength(), ctx -> {
      Elements out = Elements.openForCopy(recv, ctx.scratch, 0);
      Elements in = Elements.openForCopy(send, ctx.scratch, 1);
      ctx.begin(kind, tag, tag, seq, out, null, -1, 0, timeoutMs);
      ctx.copyLocal(in, rank * send.length());
      RingCollectives.allGather(ctx, Partition.even(out.length(), size));
      out.commit();
    });
  }

  // ----------------------------------------------------------------------------------------- broadcast

  @Override
  public void broadcast(DataBuffer data, int root, CollectiveOptions options) {
    broadcastCall(data, root, options).run();
  }

  @Override
  public CompletableFuture<Void> broadcastAsync(DataBuffer data, int root, CollectiveOptions options) {
    return submit(broadcastCall(data, root, options));
  }

  private Runnable broadcastCall(DataBuffer data, int root, CollectiveOptions options) {
    CollectiveKind kind = CollectiveKind.BROADCAST;
    checkCall(kind, options);
    requireData(kind, data, "data");
    requireRank(kind, root, "root");
    int tag = options.tag();
    long seq = nextSeq(tag, 1);
    if (size == 1) {
      return NOTHING;
    }
    long timeoutMs = timeoutMs(options);
    boolean chain = data.byteLength() >= config.broadcastChainMinBytes();
    return () -> execute(kind, seq, data.byteLength(), ctx -> {
      Elements el = Elements.openForCopy(data, ctx.scratch, 0);
      ctx.begin(kind, tag, tag, seq, el, null, root, 0, timeoutMs);
      if (chain) {
        BroadcastAlgorithms.chain(ctx, root);
      } else {
        BroadcastAlgorithms.direct(ctx, root);
      }
      if (rank != root) {
        el.commit();
      }
    });
  }

  // ------------------------------------------------------------------------------------------- barrier

  @Override
  public void barrier(CollectiveOptions options) {
    barrierCall(options).run();
  }

  @Override
  public CompletableFuture<Void> barrierAsync(CollectiveOptions options) {
    return submit(barrierCall(options));
  }

  private Runnable barrierCall(CollectiveOptions options) {
    CollectiveKind kind = CollectiveKind.BARRIER;
    checkCall(kind, options);
    int tag = options.tag();
    long seq = nextSeq(tag, 1);
    if (size == 1) {
      return NOTHING;
    }
    long timeoutMs = timeoutMs(options);
    return () -> execute(kind, seq, ctx -> {
      ctx.begin(kind, tag, tag, seq, Elements.ofBytes(new byte[0]), null, -1, 0, timeoutMs);
      DisseminationBarrier.barrier(ctx);
    });
  }

  // ------------------------------------------------------------------------------------ point-to-point

  @Override
  public void send(DataBuffer data, int peer, CollectiveOptions options) {
    pointToPointCall(data, peer, options, true).run();
  }

  @Override
  public void recv(DataBuffer data, int peer, CollectiveOptions options) {
    pointToPointCall(data, peer, options, false).run();
  }

  @Override
  public CompletableFuture<Void> sendAsync(DataBuffer data, int peer, CollectiveOptions options) {
    return submit(pointToPointCall(data, peer, options, true));
  }

  @Override
  public CompletableFuture<Void> recvAsync(DataBuffer data, int peer, CollectiveOptions options) {
    return submit(pointToPointCall(data, peer, options, false));
  }

  private Runnable pointToPointCall(DataBuffer data, int peer, CollectiveOptions options, boolean sending) {
    CollectiveKind kind = CollectiveKind.SEND_RECV;
    checkCall(kind, options);
    requireData(kind, data, "data");
    requireRank(kind, peer, "peer");
    if (peer == rank) {
      throw usage(kind, "peer " + peer + " is this rank itself");
    }
    int tag = options.tag();
    int slot = peer * CollectiveOptions.MAX_TAGS + tag;
    long seq;
    synchronized (collectiveSeq) {
      seq = sending ? sendSeq[slot]++ : recvSeq[slot]++;
    }
    long timeoutMs = timeoutMs(options);
    int stream = CollectiveOptions.MAX_TAGS + tag;
    return () -> execute(kind, seq, data.byteLength(), ctx -> {
      Elements el = Elements.openForCopy(data, ctx.scratch, 0);
      ctx.begin(kind, tag, stream, seq, el, null, -1, 0, timeoutMs);
      if (sending) {
        ctx.send(peer, 0, 0, el.length());
      } else {
        ctx.recvCopy(peer, 0, 0, el.length());
        el.commit();
      }
    });
  }

  // ------------------------------------------------------------------------------------------- objects

  @Override
  public <T> List<T> allGatherObjects(T value, CollectiveOptions options) {
    CollectiveKind kind = CollectiveKind.ALL_GATHER_OBJECTS;
    checkCall(kind, options);
    byte[] mine = serializer.serialize(value);
    int tag = options.tag();
    long seq = nextSeq(tag, 2);
    long timeoutMs = timeoutMs(options);
    int[] lengths = new int[size];
    lengths[rank] = mine.length;
    execute(kind, seq, ctx -> {
      ctx.begin(kind, tag, tag, seq, Elements.open(DataBuffer.of(lengths), ctx.scratch, 0), null, -1, 0, timeoutMs);
      RingCollectives.allGather(ctx, Partition.even(size, size));
    });
    checkObjectBytes(kind, seq, lengths, -1);
    int[] bounds = Partition.ofLengths(lengths);
    byte[] all = new byte[bounds[size]];
    System.arraycopy(mine, 0, all, bounds[rank], mine.length);
    execute(kind, seq + 1, ctx -> {
      ctx.begin(kind, tag, tag, seq + 1, Elements.ofBytes(all), null, -1, 0, timeoutMs);
      RingCollectives.allGather(ctx, bounds);
    });
    List<T> values = new ArrayList<>(size);
    for (int r = 0; r < size; r++) {
      values.add(deserialize(kind, r, all, bounds[r], lengths[r]));
    }
    return Collections.unmodifiableList(values);
  }

  @Override
  public <T> T broadcastObject(T value, int root, CollectiveOptions options) {
    CollectiveKind kind = CollectiveKind.BROADCAST_OBJECT;
    checkCall(kind, options);
    requireRank(kind, root, "root");
    byte[] mine = rank == root ? serializer.serialize(value) : null;
    int tag = options.tag();
    long seq = nextSeq(tag, 2);
    long timeoutMs = timeoutMs(options);
    int[] length = {mine == null ? 0 : mine.length};
    execute(kind, seq, ctx -> {
      ctx.begin(kind, tag, tag, seq, Elements.open(DataBuffer.of(length), ctx.scratch, 0), null, root, 0, timeoutMs);
      BroadcastAlgorithms.direct(ctx, root);
    });
    checkObjectBytes(kind, seq, length, root);
    byte[] bytes = mine != null ? mine : new byte[length[0]];
    execute(kind, seq + 1, ctx -> {
      ctx.begin(kind, tag, tag, seq + 1, Elements.ofBytes(bytes), null, root, 0, timeoutMs);
      BroadcastAlgorithms.chain(ctx, root);
    });
    return deserialize(kind, root, bytes, 0, bytes.length);
  }

  /**
   * Fails the group (on every rank: each checks the same lengths) if the objects' {@code lengths} (rank
   * {@code from}'s alone, or with -1 rank r's at r) are negative or together exceed {@code objects.maxBytes}:
   * nothing is allocated for a length a peer sent before this check.
   */
  private void checkObjectBytes(CollectiveKind kind, long seq, int[] lengths, int from) {
    long total = 0;
    for (int r = 0; r < lengths.length; r++) {
      if (lengths[r] < 0) {
        throw failGroup(new CollectiveException("rank " + rank + ": rank " + (from >= 0 ? from : r)
            + " announced an object of " + lengths[r] + " bytes in " + kind.displayName() + " #" + seq));
      }
      total += lengths[r];
    }
    if (total > config.objectMaxBytes()) {
      throw failGroup(new CollectiveException("rank " + rank + ": the objects of " + kind.displayName() + " #" + seq
          + " take " + total + " bytes (" + (from >= 0 ? "rank " + from + "'s" : "ranks' " + Arrays.toString(lengths))
          + "), more than " + CollectiveConfig.OBJECT_MAX_BYTES + "=" + config.objectMaxBytes()));
    }
  }

  @SuppressWarnings("unchecked")
  private <T> T deserialize(CollectiveKind kind, int from, byte[] bytes, int off, int len) {
    try {
      return (T) serializer.deserialize(bytes, off, len);
    } catch (RuntimeException e) {
      throw new CollectiveException("rank " + rank + " cannot deserialise the object of rank " + from + " in "
          + kind.displayName() + " (" + len + " bytes): " + e, e);
    }
  }

  // ----------------------------------------------------------------------------------------- lifecycle

  @Override
  public void checkHealth() {
    if (closed) {
      throw new CollectiveUsageException("rank " + rank + ": communicator is closed");
    }
    CollectiveException failed = transport.failure();
    if (failed != null) {
      throw failed;
    }
    CollectiveException left = transport.departure();
    if (left != null) {
      throw left;
    }
  }

  @Override
  public void abort(String reason) {
    transport.abort(new CollectiveException(reason));
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    RuntimeException first = null;
    ThreadPoolExecutor executor;
    synchronized (this) {
      executor = asyncExecutor;
    }
    try {
      if (executor != null) {
        for (Runnable pending : executor.shutdownNow()) {
          ((AsyncCall) pending).future.completeExceptionally(
              new CollectiveUsageException("rank " + rank + ": communicator closed before the operation ran"));
        }
      }
    } catch (RuntimeException e) {
      first = e;
    }
    try {
      transport.close();
    } catch (RuntimeException e) {
      first = keep(first, e);
    }
    try {
      if (executor != null && !executor.awaitTermination(10, TimeUnit.SECONDS)) {
        first = keep(first, new CollectiveException("rank " + rank + ": async operation did not stop on close"));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      first = keep(first, new CollectiveException("rank " + rank + ": interrupted while closing", e));
    }
    synchronized (idleContexts) {
      idleContexts.clear();
    }
    if (first != null) {
      throw first;
    }
  }

  private static RuntimeException keep(RuntimeException first, RuntimeException next) {
    if (first == null) {
      return next;
    }
    first.addSuppressed(next);
    return first;
  }

  // ------------------------------------------------------------------------------------------ plumbing

  @FunctionalInterface
  private interface Body {
    void run(OpContext ctx);
  }

  /** Runs one operation; any failure fails the group and the group's first failure is thrown. */
  private void execute(CollectiveKind kind, long seq, Body body) {
    execute(kind, seq, 0, body);
  }

  private void execute(CollectiveKind kind, long seq, long bytes, Body body) {
    CollectiveException failed = transport.failure();
    if (failed != null) {
      CollectiveException first = failGroup(failed);
      observer.failed(kind, first);
      throw first;
    }
    if (closed) {
      throw new CollectiveUsageException("rank " + rank + ": communicator is closed");
    }
    String cancelled = Cancellation.check(cancellation);
    if (cancelled != null) {
      CollectiveException first = failGroup(new CollectiveCancelledException("rank " + rank + " did not start "
          + kind.displayName() + " #" + seq + ": " + cancelled));
      observer.failed(kind, first);
      throw first;
    }
    OpContext ctx = acquireContext();
    long start = System.nanoTime();
    transport.operationBegins();
    try {
      body.run(ctx);
      if (kind != CollectiveKind.LINK_PROBE) { // the group's own, not a call of its users
        observer.completed(kind, bytes, System.nanoTime() - start);
      }
    } catch (CollectiveException e) {
      CollectiveException first = failGroup(e);
      observer.failed(kind, first);
      throw first;
    } catch (RuntimeException | Error e) {
      CollectiveException first = failGroup(new CollectiveException(
          "rank " + rank + ": internal error in " + kind.displayName() + " #" + seq + ": " + e, e));
      observer.failed(kind, first);
      throw first;
    } finally {
      ctx.end();
      releaseContext(ctx);
      transport.operationEnds();
    }
  }

  private CollectiveException failGroup(CollectiveException e) {
    if (transport.failure() == null) {
      LOG.warn("rank {} of {}: group failed: {}", rank, size, e.getMessage());
    }
    transport.abort(e);
    CollectiveException first = transport.failure();
    return first != null ? first : e;
  }

  private OpContext acquireContext() {
    synchronized (idleContexts) {
      OpContext ctx = idleContexts.pollFirst();
      if (ctx != null) {
        return ctx;
      }
    }
    return new OpContext(transport, segmentBytes, cancellation);
  }

  private void releaseContext(OpContext ctx) {
    synchronized (idleContexts) {
      if (!closed) {
        idleContexts.addFirst(ctx);
      }
    }
  }

  private long nextSeq(int tag, int count) {
    synchronized (collectiveSeq) {
      long seq = collectiveSeq[tag];
      collectiveSeq[tag] += count;
      return seq;
    }
  }

  private long timeoutMs(CollectiveOptions options) {
    return options.timeoutMs() > 0 ? options.timeoutMs() : config.operationTimeoutMs();
  }

  private CompletableFuture<Void> submit(Runnable call) {
    CompletableFuture<Void> future = new CompletableFuture<>();
    if (call == NOTHING) {
      future.complete(null);
      return future;
    }
    try {
      asyncExecutor().execute(new AsyncCall(call, future));
    } catch (RejectedExecutionException e) {
      future.completeExceptionally(new CollectiveUsageException("rank " + rank + ": communicator is closed"));
    }
    return future;
  }

  private synchronized ThreadPoolExecutor asyncExecutor() {
    if (closed) {
      throw new RejectedExecutionException("closed");
    }
    if (asyncExecutor == null) {
      asyncExecutor = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
        Thread t = new Thread(r, "collective-async-r" + rank);
        t.setDaemon(true);
        return t;
      });
    }
    return asyncExecutor;
  }

  private static final class AsyncCall implements Runnable {
    final Runnable call;
    final CompletableFuture<Void> future;

    AsyncCall(Runnable call, CompletableFuture<Void> future) {
      this.call = call;
      this.future = future;
    }

    @Override
    public void run() {
      try {
        call.run();
        future.complete(null);
      } catch (Throwable t) {
        future.completeExceptionally(t);
      }
    }
  }

  // -------------------------------------------------------------------------------------- validation

  private void checkCall(CollectiveKind kind, CollectiveOptions options) {
    if (closed) {
      throw usage(kind, "communicator is closed");
    }
    if (options == null) {
      throw usage(kind, "options are null (use CollectiveOptions.DEFAULT)");
    }
    if (options.wireType() != null && kind != CollectiveKind.ALL_REDUCE && kind != CollectiveKind.REDUCE_SCATTER) {
      throw usage(kind, "a wire type (" + options.wireType() + ") applies to allReduce and reduceScatter only");
    }
  }

  /** The wire type of a reduction of {@code data} (null: the data type's default), refusing what cannot be. */
  private DType checkWire(CollectiveKind kind, DataBuffer data, CollectiveOptions options) {
    DType wire = options.wireType();
    if (wire == DType.BF16 && data.dtype() != DType.F32 && data.dtype() != DType.BF16) {
      throw usage(kind, "BF16 wire compression needs F32 data, got " + data.dtype());
    }
    if (wire == DType.F32 && data.dtype() != DType.F32 && !data.dtype().isHalf()) {
      throw usage(kind, "an F32 wire (the exact mode) is for F16 and BF16 data, got " + data.dtype());
    }
    return wire == data.dtype() ? null : wire;
  }

  /** The bytes of {@code data} that cross the wire (what the algorithm is chosen by). */
  private static long wireBytes(DataBuffer data, DType wire) {
    if (wire == DType.BF16) {
      return data.byteLength() / 2;
    }
    return wire == DType.F32 && data.dtype().isHalf() ? data.byteLength() * 2 : data.byteLength();
  }

  private void requireData(CollectiveKind kind, DataBuffer data, String name) {
    if (data == null) {
      throw usage(kind, name + " buffer is null");
    }
  }

  private void requireOp(CollectiveKind kind, ReduceOp op) {
    if (op == null) {
      throw usage(kind, "reduce op is null");
    }
  }

  private void requireRank(CollectiveKind kind, int r, String name) {
    if (r < 0 || r >= size) {
      throw usage(kind, name + " " + r + " is not a rank of this group of " + size);
    }
  }

  private CollectiveUsageException usage(CollectiveKind kind, String what) {
    return new CollectiveUsageException("rank " + rank + " " + kind.displayName() + ": " + what);
  }
}
