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
  private final int ranksPerHost;
  private final double linkBytesPerSecond;
  private final double latencySeconds;
  private final double localLatencySeconds;
  private final double overheadSeconds;
  private final double reduceBytesPerSecond;
  private final double copyBytesPerSecond;
  private final int headerBytes;
  private final int slowHost;
  private final double slowFactor;
  private final double burstBytes;
  private final double burstPeakFactor;
  private final int machineCores;

  private NetworkModel(int ranksPerHost, double linkBytesPerSecond, double latencySeconds,
      double localLatencySeconds, double overheadSeconds, double reduceBytesPerSecond, double copyBytesPerSecond,
      int headerBytes, int slowHost, double slowFactor, double burstBytes, double burstPeakFactor,
      int machineCores) {
    if (ranksPerHost < 1) {
      throw new IllegalArgumentException("ranks per host must be at least 1, was " + ranksPerHost);
    }
    positive("link rate", linkBytesPerSecond);
    positive("reduction rate", reduceBytesPerSecond);
    positive("copy rate", copyBytesPerSecond);
    notNegative("latency", latencySeconds);
    notNegative("local latency", localLatencySeconds);
    notNegative("per-message overhead", overheadSeconds);
    if (headerBytes < 0) {
      throw new IllegalArgumentException("header bytes must not be negative, was " + headerBytes);
    }
    positive("slow factor", slowFactor);
    notNegative("burst", burstBytes);
    positive("burst peak factor", burstPeakFactor);
    this.ranksPerHost = ranksPerHost;
    this.linkBytesPerSecond = linkBytesPerSecond;
    this.latencySeconds = latencySeconds;
    this.localLatencySeconds = localLatencySeconds;
    this.overheadSeconds = overheadSeconds;
    this.reduceBytesPerSecond = reduceBytesPerSecond;
    this.copyBytesPerSecond = copyBytesPerSecond;
    this.headerBytes = headerBytes;
    this.slowHost = slowHost;
    this.slowFactor = slowFactor;
    this.burstBytes = burstBytes;
    this.burstPeakFactor = burstPeakFactor;
    if (machineCores < 0) {
      throw new IllegalArgumentException("machine cores must not be negative, was " + machineCores);
    }
    this.machineCores = machineCores;
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

  /**
   * Links of {@code gbitPerSecond} gigabits per second each way and {@code latencyMicros} per message, one rank
   * per host; the CPU costs AUTO's cost model assumes ({@link Tuning}'s MODEL_ constants: reduction 8 GB/s,
   * copies 16 GB/s, 1 us per message, 1 us between ranks of one host, 64 bytes of headers per message).
   */
  public static NetworkModel of(double gbitPerSecond, double latencyMicros) {
    return new NetworkModel(1, gbitPerSecond * 1e9 / 8, latencyMicros * 1e-6, Tuning.MODEL_LOCAL_LATENCY_SECONDS,
        Tuning.MODEL_MESSAGE_OVERHEAD_SECONDS, Tuning.MODEL_REDUCE_BYTES_PER_SECOND, Tuning.MODEL_COPY_BYTES_PER_SECOND,
        Tuning.MODEL_HEADER_BYTES, -1, 1, 0, 1, 0);
  }

  /** The same with {@code k} ranks on every host (ranks {@code h*k .. h*k+k-1} on host h). */
  public NetworkModel ranksPerHost(int k) {
    return new NetworkModel(k, linkBytesPerSecond, latencySeconds, localLatencySeconds, overheadSeconds,
        reduceBytesPerSecond, copyBytesPerSecond, headerBytes, slowHost, slowFactor, burstBytes, burstPeakFactor,
        machineCores);
  }

  /** The same with another latency per message between hosts. */
  public NetworkModel latency(double seconds) {
    return new NetworkModel(ranksPerHost, linkBytesPerSecond, seconds, localLatencySeconds, overheadSeconds,
        reduceBytesPerSecond, copyBytesPerSecond, headerBytes, slowHost, slowFactor, burstBytes, burstPeakFactor,
        machineCores);
  }

  /** The same with host {@code host}'s link at {@code factor} of the rate (e.g. 0.1), both ways. */
  public NetworkModel slowHost(int host, double factor) {
    return new NetworkModel(ranksPerHost, linkBytesPerSecond, latencySeconds, localLatencySeconds, overheadSeconds,
        reduceBytesPerSecond, copyBytesPerSecond, headerBytes, host, factor, burstBytes, burstPeakFactor, machineCores);
  }

  /** The same with other CPU costs: seconds per message on each side, and bytes per second reduced and copied. */
  public NetworkModel cpu(double overheadSeconds, double reduceBytesPerSecond, double copyBytesPerSecond) {
    return new NetworkModel(ranksPerHost, linkBytesPerSecond, latencySeconds, localLatencySeconds, overheadSeconds,
        reduceBytesPerSecond, copyBytesPerSecond, headerBytes, slowHost, slowFactor, burstBytes, burstPeakFactor,
        machineCores);
  }

  /** The same with another latency between ranks of one host and another header size per message. */
  public NetworkModel local(double localLatencySeconds, int headerBytes) {
    return new NetworkModel(ranksPerHost, linkBytesPerSecond, latencySeconds, localLatencySeconds, overheadSeconds,
        reduceBytesPerSecond, copyBytesPerSecond, headerBytes, slowHost, slowFactor, burstBytes, burstPeakFactor,
        machineCores);
  }

  /**
   * The same with every link direction shaped by a token bucket, as Linux's tbf qdisc shapes the test bed's
   * links: up to {@code bytes} (refilled at the link's rate) pass at {@code peakFactor} times the rate after
   * the link was idle, the rest at the rate. Without it (the default) a link always moves at its rate.
   */
  public NetworkModel burst(double bytes, double peakFactor) {
    return new NetworkModel(ranksPerHost, linkBytesPerSecond, latencySeconds, localLatencySeconds, overheadSeconds,
        reduceBytesPerSecond, copyBytesPerSecond, headerBytes, slowHost, slowFactor, bytes, peakFactor, machineCores);
  }

  /**
   * The same with every rank on one machine of {@code cores} cores (0: a core per rank, the default), as the
   * processes of a test on one host are: a rank's CPU work waits for a free core. On loopback the kernel's
   * copies are CPU work of the sending and the receiving rank, so the link is then best left fast and the
   * copy rate set to what a core copies through a socket.
   */
  public NetworkModel machineCores(int cores) {
    return new NetworkModel(ranksPerHost, linkBytesPerSecond, latencySeconds, localLatencySeconds, overheadSeconds,
        reduceBytesPerSecond, copyBytesPerSecond, headerBytes, slowHost, slowFactor, burstBytes, burstPeakFactor,
        cores);
  }

  public int machineCores() {
    return machineCores;
  }

  public double burstBytes() {
    return burstBytes;
  }

  public double burstPeakFactor() {
    return burstPeakFactor;
  }

  public int ranksPerHost() {
    return ranksPerHost;
  }

  public int hostOf(int rank) {
    return rank / ranksPerHost;
  }

  /** Bytes per second of {@code host}'s link in each direction. */
  public double linkBytesPerSecond(int host) {
    return host == slowHost ? linkBytesPerSecond * slowFactor : linkBytesPerSecond;
  }

  /** Bytes per second of a (not slow) host's link in each direction. */
  public double linkBytesPerSecond() {
    return linkBytesPerSecond;
  }

  public double latencySeconds() {
    return latencySeconds;
  }

  public double localLatencySeconds() {
    return localLatencySeconds;
  }

  public double overheadSeconds() {
    return overheadSeconds;
  }

  public double reduceBytesPerSecond() {
    return reduceBytesPerSecond;
  }

  public double copyBytesPerSecond() {
    return copyBytesPerSecond;
  }

  public int headerBytes() {
    return headerBytes;
  }

  public int slowHost() {
    return slowHost;
  }

  @Override
  public String toString() {
    return String.format("%.3g Gbit/s, %.3g us, %d ranks/host%s", linkBytesPerSecond * 8 / 1e9,
        latencySeconds * 1e6, ranksPerHost, slowHost >= 0 ? ", host " + slowHost + " at " + slowFactor : "");
  }
}
