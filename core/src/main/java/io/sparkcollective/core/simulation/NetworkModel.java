package io.sparkcollective.core.simulation;

import io.sparkcollective.core.config.Tuning;

/**
 * What moving and combining bytes costs on a simulated cluster: hosts joined by a switch, each host with one
 * network link (its NIC) of a given rate in each direction, shared by the ranks on that host, and a CPU core
 * per rank. A value: every setter returns a changed copy.
 *
 * <pre>
 *   rank r on host h = r / ranksPerHost
 *
 *   message of b bytes, host A -> host B (A != B):
 *     sender CPU     overheadSeconds + b / copyBytesPerSecond          (into a frame)
 *     A's egress     [se, se + b'/rate(A)]       se = max(ready, A's egress free)        b' = b + headerBytes
 *     B's ingress    [si, end]                   si = max(se, B's ingress free), end = max(si + b'/rate(B),
 *                                                 se + b'/rate(A))    (ingresses are booked in order of se)
 *     arrival        end + latencySeconds
 *   message between ranks of one host (memory):  arrival = sender ready + localLatencySeconds
 *   receiver CPU     overheadSeconds + b / reduceBytesPerSecond (combining) or b / copyBytesPerSecond (copying)
 * </pre>
 *
 * A slow host's link runs at {@code slowFactor} of the rate in both directions. The model is the classic
 * alpha-beta one (per-message latency, per-byte link time) with the NIC shared by its host's ranks in each
 * direction and the receiver's CPU time for the reduction (often called gamma) on top.
 */
public final class NetworkModel {
  /** The settings; each copy-with-a-change fills a fresh one, so a model's own never changes. */
  private static final class Values implements Cloneable {
    int ranksPerHost = 1;
    double linkBytesPerSecond;
    double latencySeconds;
    double localLatencySeconds = Tuning.MODEL_LOCAL_LATENCY_SECONDS;
    double overheadSeconds = Tuning.MODEL_MESSAGE_OVERHEAD_SECONDS;
    double reduceBytesPerSecond = Tuning.MODEL_REDUCE_BYTES_PER_SECOND;
    double copyBytesPerSecond = Tuning.MODEL_COPY_BYTES_PER_SECOND;
    int headerBytes = Tuning.MODEL_HEADER_BYTES;
    int slowHost = -1;
    double slowFactor = 1;
    double burstBytes;
    double burstPeakFactor = 1;
    int machineCores;
    double switchSeconds;
    /** The share of its rate a rank moves bytes at when it had to wait for a core (1: all of it). */
    double crowdedFactor = 1;
    /** Rates of a rank's work on memory alone (0: the message rates). */
    double memoryReduceBytesPerSecond;
    double memoryCopyBytesPerSecond;

    @Override
    protected Values clone() {
      try {
        return (Values) super.clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values values;

  private NetworkModel(Values v) {
    if (v.ranksPerHost < 1) {
      throw new IllegalArgumentException("ranks per host must be at least 1, was " + v.ranksPerHost);
    }
    positive("link rate", v.linkBytesPerSecond);
    positive("reduction rate", v.reduceBytesPerSecond);
    positive("copy rate", v.copyBytesPerSecond);
    notNegative("latency", v.latencySeconds);
    notNegative("local latency", v.localLatencySeconds);
    notNegative("per-message overhead", v.overheadSeconds);
    if (v.headerBytes < 0) {
      throw new IllegalArgumentException("header bytes must not be negative, was " + v.headerBytes);
    }
    positive("slow factor", v.slowFactor);
    notNegative("burst", v.burstBytes);
    positive("burst peak factor", v.burstPeakFactor);
    notNegative("memory reduction rate", v.memoryReduceBytesPerSecond);
    notNegative("memory copy rate", v.memoryCopyBytesPerSecond);
    notNegative("context switch", v.switchSeconds);
    if (!(v.crowdedFactor > 0 && v.crowdedFactor <= 1)) {
      throw new IllegalArgumentException("crowded factor must be above 0 and at most 1, was " + v.crowdedFactor);
    }
    if (v.machineCores < 0) {
      throw new IllegalArgumentException("machine cores must not be negative, was " + v.machineCores);
    }
    this.values = v;
  }

  private static void positive(String what, double v) {
    if (!(v > 0) || Double.isInfinite(v)) {
      throw new IllegalArgumentException(what + " must be a positive number, was " + v);
    }
  }

  private static void notNegative(String what, double v) {
    if (!(v >= 0) || Double.isInfinite(v)) {
      throw new IllegalArgumentException(what + " must be zero or positive, was " + v);
    }
  }

  /** This model with {@code change} made to a copy of its settings. */
  private NetworkModel with(java.util.function.Consumer<Values> change) {
    Values v = values.clone();
    change.accept(v);
    return new NetworkModel(v);
  }

  /**
   * Links of {@code gbitPerSecond} gigabits per second each way and {@code latencyMicros} per message, one rank
   * per host; the CPU costs AUTO's cost model assumes ({@link Tuning}'s MODEL_ constants: reduction 8 GB/s,
   * copies 16 GB/s, 1 us per message, 1 us between ranks of one host, 64 bytes of headers per message).
   */
  public static NetworkModel of(double gbitPerSecond, double latencyMicros) {
    Values v = new Values();
    v.linkBytesPerSecond = gbitPerSecond * 1e9 / 8;
    v.latencySeconds = latencyMicros * 1e-6;
    return new NetworkModel(v);
  }

  /** The same with {@code k} ranks on every host (ranks {@code h*k .. h*k+k-1} on host h). */
  public NetworkModel ranksPerHost(int k) {
    return with(v -> v.ranksPerHost = k);
  }

  /** The same with another latency per message between hosts. */
  public NetworkModel latency(double seconds) {
    return with(v -> v.latencySeconds = seconds);
  }

  /** The same with host {@code host}'s link at {@code factor} of the rate (e.g. 0.1), both ways. */
  public NetworkModel slowHost(int host, double factor) {
    return with(v -> {
      v.slowHost = host;
      v.slowFactor = factor;
    });
  }

  /** The same with other CPU costs: seconds per message on each side, and bytes per second reduced and copied. */
  public NetworkModel cpu(double overheadSeconds, double reduceBytesPerSecond, double copyBytesPerSecond) {
    return with(v -> {
      v.overheadSeconds = overheadSeconds;
      v.reduceBytesPerSecond = reduceBytesPerSecond;
      v.copyBytesPerSecond = copyBytesPerSecond;
    });
  }

  /** The same with another latency between ranks of one host and another header size per message. */
  public NetworkModel local(double localLatencySeconds, int headerBytes) {
    return with(v -> {
      v.localLatencySeconds = localLatencySeconds;
      v.headerBytes = headerBytes;
    });
  }

  /**
   * The same with every link direction shaped by a token bucket, as Linux's tbf qdisc shapes the test bed's
   * links: up to {@code bytes} (refilled at the link's rate) pass at {@code peakFactor} times the rate after
   * the link was idle, the rest at the rate. Without it (the default) a link always moves at its rate.
   */
  public NetworkModel burst(double bytes, double peakFactor) {
    return with(v -> {
      v.burstBytes = bytes;
      v.burstPeakFactor = peakFactor;
    });
  }

  /**
   * The same with every rank on one machine of {@code cores} cores (0: a core per rank, the default), as the
   * processes of a test on one host are: a rank's CPU work waits for a free core. On loopback the kernel's
   * copies are CPU work of the sending and the receiving rank, so the link is then best left fast and the
   * copy rate set to what a core copies through a socket.
   */
  public NetworkModel machineCores(int cores) {
    return with(v -> v.machineCores = cores);
  }

  /**
   * The same with ranks on one machine of {@code cores} cores (as {@link #machineCores(int)}) that pay
   * {@code switchSeconds} of CPU each time one resumes on a core another rank used since it last ran there: the
   * scheduler's context switch and the caches refilled, which ranks that outnumber the cores pay on every wait
   * and ranks with a core each never.
   */
  public NetworkModel machineCores(int cores, double switchSeconds) {
    return with(v -> {
      v.machineCores = cores;
      v.switchSeconds = switchSeconds;
    });
  }

  /**
   * The same with a rank on a machine of few cores (see {@link #machineCores(int)}) moving its bytes at
   * {@code factor} of its rate whenever it found every core busy and had to wait for one; a message's fixed CPU
   * is not slowed. Ranks that outnumber the cores take turns in the scheduler's time slices, and every slice of a
   * long copy begins with caches another rank filled; a rank that finds a core free keeps its caches and its rate.
   */
  public NetworkModel crowded(double factor) {
    return with(v -> v.crowdedFactor = factor);
  }

  /** The share of its rate a rank moves bytes at when it had to wait for a core. */
  public double crowdedFactor() {
    return values.crowdedFactor;
  }

  /**
   * The same with other rates for a rank's work on memory alone: copying its own vector aside and combining or
   * copying it back, and reading a vector of another rank of its host in place. By default these are the
   * message rates; on loopback, where every message's bytes also pass through the kernel, they are not.
   */
  public NetworkModel memory(double reduceBytesPerSecond, double copyBytesPerSecond) {
    return with(v -> {
      v.memoryReduceBytesPerSecond = reduceBytesPerSecond;
      v.memoryCopyBytesPerSecond = copyBytesPerSecond;
    });
  }

  /** Bytes per second a rank combines working on memory alone. */
  public double memoryReduceBytesPerSecond() {
    return values.memoryReduceBytesPerSecond > 0 ? values.memoryReduceBytesPerSecond : values.reduceBytesPerSecond;
  }

  /** Bytes per second a rank copies working on memory alone. */
  public double memoryCopyBytesPerSecond() {
    return values.memoryCopyBytesPerSecond > 0 ? values.memoryCopyBytesPerSecond : values.copyBytesPerSecond;
  }

  public int machineCores() {
    return values.machineCores;
  }

  /** CPU seconds a rank pays to resume on a core of the machine that another rank used meanwhile. */
  public double switchSeconds() {
    return values.switchSeconds;
  }

  public double burstBytes() {
    return values.burstBytes;
  }

  public double burstPeakFactor() {
    return values.burstPeakFactor;
  }

  public int ranksPerHost() {
    return values.ranksPerHost;
  }

  public int hostOf(int rank) {
    return rank / values.ranksPerHost;
  }

  /** Bytes per second of {@code host}'s link in each direction. */
  public double linkBytesPerSecond(int host) {
    return host == values.slowHost ? values.linkBytesPerSecond * values.slowFactor : values.linkBytesPerSecond;
  }

  /** Bytes per second of a (not slow) host's link in each direction. */
  public double linkBytesPerSecond() {
    return values.linkBytesPerSecond;
  }

  public double latencySeconds() {
    return values.latencySeconds;
  }

  public double localLatencySeconds() {
    return values.localLatencySeconds;
  }

  public double overheadSeconds() {
    return values.overheadSeconds;
  }

  public double reduceBytesPerSecond() {
    return values.reduceBytesPerSecond;
  }

  public double copyBytesPerSecond() {
    return values.copyBytesPerSecond;
  }

  public int headerBytes() {
    return values.headerBytes;
  }

  public int slowHost() {
    return values.slowHost;
  }

  @Override
  public String toString() {
    return String.format("%.3g Gbit/s, %.3g us, %d ranks/host%s", values.linkBytesPerSecond * 8 / 1e9,
        values.latencySeconds * 1e6, values.ranksPerHost,
        values.slowHost >= 0 ? ", host " + values.slowHost + " at " + values.slowFactor : "");
  }
}
