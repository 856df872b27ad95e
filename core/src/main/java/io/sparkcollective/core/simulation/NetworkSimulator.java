package io.sparkcollective.core.simulation;

import io.sparkcollective.core.algorithm.AllReduceAlgorithm;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.kernel.Kernels;
import io.sparkcollective.core.time.EventQueue;
import java.util.Arrays;

/**
 * Runs one all-reduce of the library's real algorithm code on a simulated network, in virtual time: every
 * rank's {@link RankSchedule} is replayed as a discrete-event simulation under a {@link NetworkModel}.
 *
 * <p>A rank runs its moves one after another on its own clock. A send costs the sender CPU time, then queues
 * on its host's egress link (in the order the host's ranks send), then on the receiving host's ingress link
 * (in the order messages left their egresses), and arrives a latency later; between ranks of one host it only
 * pays the local latency. A receive waits for the next message from that peer (per pair of ranks, messages
 * arrive in the order they were sent, as on a connection) and checks that it is the step, offset and length
 * the algorithm expects, as the engine does; then the receiver pays the reduction or copy. A range offered in
 * place ({@code sendShared}) is read from the sender's vector, and {@code awaitShared} waits until every such
 * range has been read. Sends never wait for their receiver (the engine's sends do not either).
 *
 * <p>To stay exact when ranks share links, a rank runs only while its clock is not past the earliest pending
 * event; otherwise it is put back into the event queue at its clock.
 *
 * <p>With values ({@link #run(AllReduceAlgorithm, float[][], int, NetworkModel, ReduceOp)}) every move also
 * moves and combines the values with the library's kernels, in the order the simulation delivers them, so the
 * result can be compared bit for bit with a real transport's.
 */
public final class NetworkSimulator {
  private static final int RUN = 0;
  private static final int BOOK_INGRESS = 1;
  private static final int ARRIVE = 2;
  private static final int RUNNABLE = -1;
  private static final int AWAITING_READERS = -2;
  private static final int FINISHED = -3;
  private static final int NONE = -1;

  private final RankSchedule[] schedules;
  private final NetworkModel model;
  private final int ranks;
  private final int elementBytes;
  private final int segment;
  private final EventQueue queue = new EventQueue();

  // Ranks.
  private final int[] pc;
  private final int[] segmentIndex;
  private final double[] clock;
  private final int[] waitingFor;
  private final int[] unreadOffers;
  private final long[] networkBytes;
  private final long[] localBytes;

  // Hosts.
  private final double[] egressFree;
  private final double[] ingressFree;
  /** Token-bucket fill of each link direction at its free time (only with a burst, see NetworkModel#burst). */
  private final double[] egressTokens;
  private final double[] ingressTokens;
  /** When each core of the one machine is free again (null: every rank has a core of its own). */
  private final double[] coreFree;
  /** The rank that last ran on each core, and the core each rank last ran on (-1: none yet). */
  private final int[] coreUser;
  private final int[] lastCore;

  // Messages in flight: a pool of parallel arrays, with per-pair queues linked through next.
  private int[] mSrc = new int[1024];
  private int[] mDst = new int[1024];
  private int[] mStep = new int[1024];
  private int[] mOff = new int[1024];
  private int[] mLen = new int[1024];
  private boolean[] mShared = new boolean[1024];
  private int[] mNext = new int[1024];
  /** When a message's last byte left its sender's link. */
  private double[] mLeft = new double[1024];
  private float[][] mValues;
  private int pooled;
  private int free = NONE;
  private final int[] head;
  private final int[] tail;
  private long messages;

  // Values (null when counting only).
  private final float[][] vectors;
  private final ReduceOp op;
  private final float[] scratch;
  private final float[][] stash;

  private NetworkSimulator(RankSchedule[] schedules, NetworkModel model, int elementBytes, float[][] vectors,
      ReduceOp op) {
    this.schedules = schedules;
    this.model = model;
    this.ranks = schedules.length;
    this.elementBytes = elementBytes;
    this.segment = schedules[0].segmentElements();
    this.pc = new int[ranks];
    this.segmentIndex = new int[ranks];
    this.clock = new double[ranks];
    this.waitingFor = new int[ranks];
    this.unreadOffers = new int[ranks];
    this.networkBytes = new long[ranks];
    this.localBytes = new long[ranks];
    int hosts = model.hostOf(ranks - 1) + 1;
    this.egressFree = new double[hosts];
    this.ingressFree = new double[hosts];
    this.egressTokens = new double[hosts];
    this.ingressTokens = new double[hosts];
    Arrays.fill(egressTokens, model.burstBytes());
    this.coreFree = model.machineCores() > 0 ? new double[model.machineCores()] : null;
    this.coreUser = new int[Math.max(0, model.machineCores())];
    Arrays.fill(coreUser, -1);
    this.lastCore = new int[ranks];
    Arrays.fill(lastCore, -1);
    Arrays.fill(ingressTokens, model.burstBytes());
    this.head = new int[Math.multiplyExact(ranks, ranks)];
    this.tail = new int[ranks * ranks];
    Arrays.fill(head, NONE);
    Arrays.fill(tail, NONE);
    this.vectors = vectors;
    this.op = op;
    this.scratch = vectors == null ? null : new float[schedules[0].length()];
    this.stash = vectors == null ? null : new float[ranks][];
    this.mValues = vectors == null ? null : new float[1024][];
  }

  /**
   * Simulates {@code algorithm} on {@code ranks} ranks for a vector of {@code length} elements of
   * {@code elementBytes} bytes each, cut into segments of {@code segmentElements}, under {@code model}; moves
   * no values.
   */
  public static SimulationResult run(AllReduceAlgorithm algorithm, int ranks, int length, int elementBytes,
      int segmentElements, NetworkModel model) {
    return run(algorithm, ranks, length, elementBytes, segmentElements, model, 1);
  }

  /**
   * The same for {@code operations} all-reduces called back to back (see {@link RankSchedule#record(
   * AllReduceAlgorithm, int, int, int, int, boolean, int)}): what a loop of calls, or a benchmark that divides
   * the time of a batch by its size, measures.
   */
  public static SimulationResult run(AllReduceAlgorithm algorithm, int ranks, int length, int elementBytes,
      int segmentElements, NetworkModel model, int operations) {
    RankSchedule[] s = new RankSchedule[ranks];
    boolean share = model.ranksPerHost() > 1;
    for (int r = 0; r < ranks; r++) {
      s[r] = RankSchedule.record(algorithm, r, ranks, length, segmentElements, share, operations);
    }
    return new NetworkSimulator(s, model, elementBytes, null, null).simulate();
  }

  /**
   * Simulates {@code algorithm} on {@code vectors.length} ranks, each starting with its vector, and leaves the
   * all-reduce's result in every vector (AVG is left as SUM, as the algorithms do before the engine divides).
   */
  public static SimulationResult run(AllReduceAlgorithm algorithm, float[][] vectors, int segmentElements,
      NetworkModel model, ReduceOp op) {
    for (float[] v : vectors) {
      if (v.length != vectors[0].length) {
        throw new IllegalArgumentException("vectors of different lengths: " + v.length + " and " + vectors[0].length);
      }
    }
    RankSchedule[] s = record(algorithm, vectors.length, vectors[0].length, segmentElements, model);
    return new NetworkSimulator(s, model, Float.BYTES, vectors, op).simulate();
  }

  private static RankSchedule[] record(AllReduceAlgorithm algorithm, int ranks, int length, int segmentElements,
      NetworkModel model) {
    RankSchedule[] s = new RankSchedule[ranks];
    boolean share = model.ranksPerHost() > 1;
    for (int r = 0; r < ranks; r++) {
      s[r] = RankSchedule.record(algorithm, r, ranks, length, segmentElements, share);
    }
    return s;
  }

  private SimulationResult simulate() {
    for (int r = 0; r < ranks; r++) {
      queue.add(0, RUN, r);
      waitingFor[r] = RUNNABLE;
    }
    while (!queue.isEmpty()) {
      double t = queue.peekTime();
      int kind = queue.peekKind();
      int ref = (int) queue.peekRef();
      queue.poll();
      if (kind == RUN) {
        run(ref, t);
      } else if (kind == BOOK_INGRESS) {
        bookIngress(ref, t);
      } else {
        arrive(ref, t);
      }
    }
    int steps = 0;
    for (int r = 0; r < ranks; r++) {
      if (waitingFor[r] != FINISHED) {
        throw new IllegalStateException("the simulation stalled: " + describeStall());
      }
      steps = Math.max(steps, schedules[r].maxStep() + 1);
    }
    return new SimulationResult(clock.clone(), networkBytes, localBytes, messages, steps, queue.added());
  }

  private String describeStall() {
    StringBuilder s = new StringBuilder();
    for (int r = 0; r < ranks && s.length() < 2000; r++) {
      if (waitingFor[r] >= 0) {
        int i = pc[r];
        s.append("rank ").append(r).append(" waits for rank ").append(waitingFor[r]).append(" at step ")
            .append(schedules[r].step(i)).append(" [").append(schedules[r].offset(i)).append('+')
            .append(schedules[r].elements(i)).append("); ");
      } else if (waitingFor[r] == AWAITING_READERS) {
        s.append("rank ").append(r).append(" waits for ").append(unreadOffers[r])
            .append(" offered ranges to be read; ");
      }
    }
    return s.toString();
  }

  private int segmentsOf(int n) {
    return n == 0 ? 1 : (n + segment - 1) / segment;
  }

  private boolean sameHost(int a, int b) {
    return model.hostOf(a) == model.hostOf(b);
  }

  /** Runs rank {@code r} from time {@code t} until it blocks, finishes or would pass the next event. */
  private void run(int r, double t) {
    RankSchedule s = schedules[r];
    clock[r] = Math.max(clock[r], t);
    waitingFor[r] = RUNNABLE;
    boolean moved = false;
    while (true) {
      int i = pc[r];
      if (i == s.moves()) {
        waitingFor[r] = FINISHED;
        return;
      }
      // Past the next event: it goes first. At its very time after a move, too, where every rank has a core of
      // its own: ranks that reach one instant take their turns in the order they got there, whichever of them
      // the queue ran first (otherwise a rank that found nothing else pending would send a second segment ahead
      // of another rank's first). On a machine of few cores the rank that runs keeps its core through the tie.
      if (!queue.isEmpty() && (clock[r] > queue.peekTime()
          || moved && coreFree == null && clock[r] == queue.peekTime())) {
        queue.add(clock[r], RUN, r);
        return;
      }
      moved = true;
      int move = s.move(i);
      int off = s.offset(i);
      int n = s.elements(i);
      switch (move) {
        case RankSchedule.SEND:
          sendSegment(r, s.peer(i), s.step(i), off, n);
          break;
        case RankSchedule.SEND_SHARED:
          offer(r, s.peer(i), s.step(i), off, n);
          pc[r]++;
          break;
        case RankSchedule.RECV_REDUCE:
        case RankSchedule.RECV_COPY:
          if (!receive(r, s.peer(i), s.step(i), off, n, move == RankSchedule.RECV_REDUCE)) {
            waitingFor[r] = s.peer(i);
            return;
          }
          break;
        case RankSchedule.STASH:
          work(r, 0, bytes(n) / model.memoryCopyBytesPerSecond());
          if (vectors != null) {
            stash[r] = Arrays.copyOfRange(vectors[r], off, off + n);
          }
          pc[r]++;
          break;
        case RankSchedule.COPY_FROM_STASH:
          work(r, 0, bytes(n) / model.memoryCopyBytesPerSecond());
          if (vectors != null) {
            System.arraycopy(stash[r], 0, vectors[r], off, n);
          }
          pc[r]++;
          break;
        case RankSchedule.REDUCE_FROM_STASH:
          work(r, 0, bytes(n) / model.memoryReduceBytesPerSecond());
          if (vectors != null) {
            System.arraycopy(stash[r], 0, scratch, off, n);
            Kernels.reduce(vectors[r], scratch, off, n, op);
          }
          pc[r]++;
          break;
        case RankSchedule.AWAIT_SHARED:
          if (unreadOffers[r] > 0) {
            waitingFor[r] = AWAITING_READERS;
            return;
          }
          pc[r]++;
          break;
        default:
          throw new IllegalStateException("unknown move " + move);
      }
    }
  }

  /**
   * Rank r computes: {@code fixed} seconds of CPU for the move and {@code perByte} seconds for its bytes. On its
   * own core; or, when the model puts every rank on one machine of a few cores, on the core it last ran on if that
   * one is free when it is ready (the scheduler keeps a task where it ran), else on the core that frees first. A
   * rank that finds every core busy waits for one and then moves its bytes at the model's crowded share of its
   * rate ({@link NetworkModel#crowded(double)}).
   */
  private void work(int r, double fixed, double perByte) {
    if (coreFree == null) {
      clock[r] += fixed + perByte;
      return;
    }
    int core = lastCore[r];
    if (core < 0 || coreFree[core] > clock[r]) {
      core = 0;
      for (int c = 1; c < coreFree.length; c++) {
        if (coreFree[c] < coreFree[core]) {
          core = c;
        }
      }
    }
    double own = coreFree[core] > clock[r] ? fixed + perByte / model.crowdedFactor() : fixed + perByte;
    double cost = coreUser[core] == r || coreUser[core] < 0 ? own : own + model.switchSeconds();
    coreUser[core] = r;
    lastCore[r] = core;
    clock[r] = Math.max(clock[r], coreFree[core]) + cost;
    coreFree[core] = clock[r];
  }

  private double bytes(int elements) {
    return (double) elements * elementBytes;
  }

  /** Sends the rank's next segment of the current move. */
  private void sendSegment(int r, int peer, int step, int off, int n) {
    int k = segmentIndex[r];
    int so = off + k * segment;
    int sn = Math.min(segment, n - k * segment);
    if (++segmentIndex[r] == segmentsOf(n)) {
      segmentIndex[r] = 0;
      pc[r]++;
    }
    long b = (long) sn * elementBytes;
    work(r, model.overheadSeconds(), b / model.copyBytesPerSecond());
    int m = message(r, peer, step, so, sn, false);
    if (vectors != null) {
      mValues[m] = Arrays.copyOfRange(vectors[r], so, so + sn);
    }
    if (sameHost(r, peer)) {
      localBytes[r] += b;
      queue.add(clock[r] + model.localLatencySeconds(), ARRIVE, m);
      return;
    }
    networkBytes[r] += b;
    int h = model.hostOf(r);
    double start = Math.max(clock[r], egressFree[h]);
    egressFree[h] = start + transmit(egressTokens, h, start, egressFree[h], b + model.headerBytes());
    mLeft[m] = egressFree[h];
    queue.add(start, BOOK_INGRESS, m);
  }

  /** Offers {@code [off, off+n)} of rank r's vector to a rank of its host, which reads it in place. */
  private void offer(int r, int peer, int step, int off, int n) {
    work(r, model.overheadSeconds(), 0);
    localBytes[r] += (long) n * elementBytes;
    unreadOffers[r]++;
    int m = message(r, peer, step, off, n, true);
    queue.add(clock[r] + model.localLatencySeconds(), ARRIVE, m);
  }

  /** A message that left its host's egress at {@code t} takes its turn on the receiving host's ingress. */
  private void bookIngress(int m, double t) {
    int src = mSrc[m];
    int dst = mDst[m];
    double wire = (double) mLen[m] * elementBytes + model.headerBytes();
    int dh = model.hostOf(dst);
    double in = Math.max(t, ingressFree[dh]);
    double end = Math.max(in + transmit(ingressTokens, dh, in, ingressFree[dh], wire), mLeft[m]);
    ingressFree[dh] = end;
    queue.add(end + model.latencySeconds(), ARRIVE, m);
  }

  /**
   * How long {@code bytes} take through host {@code h}'s link direction starting at {@code start} (the direction
   * was free since {@code free}): at the link's rate, or at its peak rate while its token bucket holds them.
   */
  private double transmit(double[] tokens, int h, double start, double free, double bytes) {
    double rate = model.linkBytesPerSecond(h);
    double burst = model.burstBytes();
    if (burst <= 0) {
      return bytes / rate;
    }
    double have = Math.min(burst, tokens[h] + Math.max(0, start - free) * rate);
    double fast = Math.min(have, bytes);
    double seconds = fast / (rate * model.burstPeakFactor()) + (bytes - fast) / rate;
    tokens[h] = Math.min(burst, have - fast + fast / model.burstPeakFactor());
    return seconds;
  }

  private void arrive(int m, double t) {
    int src = mSrc[m];
    int dst = mDst[m];
    int pair = dst * ranks + src;
    mNext[m] = NONE;
    if (tail[pair] == NONE) {
      head[pair] = m;
    } else {
      mNext[tail[pair]] = m;
    }
    tail[pair] = m;
    if (waitingFor[dst] == src) {
      run(dst, t);
    }
  }

  /**
   * Takes the next segment of the current receive of rank r if it has arrived (false: wait), checks it against
   * what the algorithm expects, and combines or copies it.
   */
  private boolean receive(int r, int peer, int step, int off, int n, boolean reduce) {
    int pair = r * ranks + peer;
    int m = head[pair];
    if (m == NONE) {
      return false;
    }
    head[pair] = mNext[m];
    if (head[pair] == NONE) {
      tail[pair] = NONE;
    }
    double rate = reduce ? model.reduceBytesPerSecond() : model.copyBytesPerSecond();
    if (mShared[m]) {
      // The whole range, read in place from the sender's vector: work on memory, no message to take apart.
      expect(r, m, peer, step, off, n);
      double inPlace = reduce ? model.memoryReduceBytesPerSecond() : model.memoryCopyBytesPerSecond();
      work(r, model.overheadSeconds(), bytes(n) / inPlace);
      if (vectors != null) {
        combine(vectors[r], vectors[peer], off, n, reduce);
      }
      if (--unreadOffers[peer] == 0 && waitingFor[peer] == AWAITING_READERS) {
        waitingFor[peer] = RUNNABLE;
        queue.add(clock[r], RUN, peer);
      }
      release(m);
      pc[r]++;
      return true;
    }
    int k = segmentIndex[r];
    int so = off + k * segment;
    int sn = Math.min(segment, n - k * segment);
    expect(r, m, peer, step, so, sn);
    if (++segmentIndex[r] == segmentsOf(n)) {
      segmentIndex[r] = 0;
      pc[r]++;
    }
    work(r, model.overheadSeconds(), bytes(sn) / rate);
    if (vectors != null) {
      System.arraycopy(mValues[m], 0, scratch, so, sn);
      combine(vectors[r], scratch, so, sn, reduce);
      mValues[m] = null;
    }
    release(m);
    return true;
  }

  private void combine(float[] dst, float[] src, int off, int n, boolean reduce) {
    if (reduce) {
      Kernels.reduce(dst, src, off, n, op);
    } else {
      System.arraycopy(src, off, dst, off, n);
    }
  }

  private void expect(int r, int m, int peer, int step, int off, int n) {
    if (mStep[m] != step || mOff[m] != off || mLen[m] != n) {
      throw new IllegalStateException("rank " + r + " expected step " + step + " [" + off + "+" + n + ") from rank "
          + peer + " but the next message was step " + mStep[m] + " [" + mOff[m] + "+" + mLen[m] + ")"
          + (mShared[m] ? " (offered in place)" : ""));
    }
  }

  private int message(int src, int dst, int step, int off, int n, boolean shared) {
    int m;
    if (free != NONE) {
      m = free;
      free = mNext[m];
    } else {
      if (pooled == mSrc.length) {
        grow();
      }
      m = pooled++;
    }
    mSrc[m] = src;
    mDst[m] = dst;
    mStep[m] = step;
    mOff[m] = off;
    mLen[m] = n;
    mShared[m] = shared;
    messages++;
    return m;
  }

  private void release(int m) {
    mNext[m] = free;
    free = m;
  }

  private void grow() {
    int n = mSrc.length * 2;
    mSrc = Arrays.copyOf(mSrc, n);
    mDst = Arrays.copyOf(mDst, n);
    mStep = Arrays.copyOf(mStep, n);
    mOff = Arrays.copyOf(mOff, n);
    mLen = Arrays.copyOf(mLen, n);
    mShared = Arrays.copyOf(mShared, n);
    mNext = Arrays.copyOf(mNext, n);
    mLeft = Arrays.copyOf(mLeft, n);
    if (mValues != null) {
      mValues = Arrays.copyOf(mValues, n);
    }
  }
}
