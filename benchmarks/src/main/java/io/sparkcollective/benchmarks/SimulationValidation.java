package io.sparkcollective.benchmarks;

import io.sparkcollective.core.algorithm.AlgorithmChoice;
import io.sparkcollective.core.algorithm.AlgorithmSelector;
import io.sparkcollective.core.algorithm.Placement;
import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.simulation.NetworkModel;
import io.sparkcollective.core.simulation.NetworkSimulator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;
import java.util.Map;

/**
 * The simulator's predictions against measured all-reduce times (README "Scale on a simulated network"): for
 * every group size of a measurement folder, every algorithm measured forced ({@code ours-RING.txt},
 * {@code ours-HALVING_DOUBLING.txt}, {@code ours-DIRECT.txt}, the tables TcpSweepWorker prints) and AUTO
 * ({@code ours-f32.txt}), the simulated time of the same all-reduce and its ratio to the measured median.
 *
 * <p>The network is taken from measurements, not from the nominal rate: the link rate from iperf3 between two
 * of the hosts ({@code iperf.json}: goodput, so TCP/IP's headers are in it), the latency from the smallest
 * group's 4-byte DIRECT all-reduce (one message time: what is left of it once the model's CPU costs are taken
 * off). For {@code benchmarks/bed/bench.sh}'s output:
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.sparkcollective.benchmarks.SimulationValidation \
 *   benchmarks/target/bed-bench 1gbit 2 3 4
 * </pre>
 *
 * (folder, rate, then the group sizes: one subfolder {@code <rate>-<N>} each). Writes {@code validation.md}
 * into the folder and prints it.
 */
public final class SimulationValidation {
  private static final String[] ALGORITHMS = {"RING", "HALVING_DOUBLING", "DIRECT", "f32"};
  /** The bound the issue of record sets for the model against reality. */
  private static final double BOUND = 0.25;

  private SimulationValidation() {}

  public static void main(String[] args) throws IOException {
    Path dir = Paths.get(args[0]);
    String rate = args[1];
    int[] sizes = new int[args.length - 2];
    for (int i = 2; i < args.length; i++) {
      sizes[i - 2] = Integer.parseInt(args[i]);
    }
    int segmentBytes = CollectiveConfig.defaults().segmentBytes();
    int segment = segmentBytes / Float.BYTES;
    Path first = dir.resolve(rate + "-" + sizes[0]);
    double goodput = SweepReport.iperfGbytesPerSecond(first.resolve("iperf.json"));
    // A rate in tc's units is the bed's (its links shaped by tbf); any other name (loopback) has no nominal rate.
    boolean bed = rate.matches("[0-9.]+[kmg]?bit");
    String network;
    NetworkModel base;
    double fastRate = 0;
    double slowRate = 0;
    long fastUpTo = 0;
    long slowFrom = 0;
    if (bed) {
      // The link from iperf3 (goodput), shaped like the bed's tbf token buckets (netbed.sh): a burst of 1 ms of
      // traffic, at least 128 KiB, passes at the veth's own speed after an idle moment, taken as 10x the rate.
      double gbit = Double.isNaN(goodput) ? BedReport.rateBytes(rate) * 8 / 1e9 : goodput * 8;
      double burst = Math.max(BedReport.rateBytes(rate) / 1000, 131072);
      double peak = Double.parseDouble(System.getProperty("peak", "10"));
      // The bed's hosts are namespaces of one machine: their processes share its cores.
      int cores = Integer.getInteger("cores", Runtime.getRuntime().availableProcessors());
      base = NetworkModel.of(gbit, 0).burst(burst, peak).machineCores(cores);
      network = String.format(Locale.ROOT, "link %.3f Gbit/s (%s) shaped like the bed's (a burst of %.0f bytes at "
          + "%.0fx the rate after idle moments); the hosts' processes on one machine of %d cores", gbit,
          Double.isNaN(goodput) ? "nominal" : "iperf3 goodput", burst, peak, cores);
    } else {
      // One machine: every rank on its cores, and the kernel's copies through the loopback are the ranks' own
      // CPU work. How fast a rank copies depends on how much of the vector the caches hold: the rate is fitted to
      // the smallest group's largest RING all-reduce and to one of a 64th of that size, and taken between the two
      // on a logarithmic scale of the vector's size.
      int cores = Integer.getInteger("cores", Runtime.getRuntime().availableProcessors());
      Map<Long, SweepReport.Row> ring = SweepReport.parseTable(first.resolve("ours-RING.txt"));
      long bigBytes = ring.keySet().stream().mapToLong(Long::longValue).max().getAsLong();
      long smallBytes = ring.keySet().stream().mapToLong(Long::longValue).filter(b -> b <= bigBytes / 64).max()
          .orElse(bigBytes);
      // A rank's work on memory alone (a stashed copy of its own vector) runs at the model's memory rates; what
      // is fitted is the rate of the bytes that go through the kernel.
      base = NetworkModel.of(10_000, 0).machineCores(cores).memory(Tuning.MODEL_REDUCE_BYTES_PER_SECOND,
          Tuning.MODEL_COPY_BYTES_PER_SECOND);
      slowRate = fitRate(base, sizes[0], ring.get(bigBytes), segment);
      fastRate = fitRate(base, sizes[0], ring.get(smallBytes), segment);
      slowFrom = bigBytes;
      fastUpTo = smallBytes;
      base = base.cpu(base.overheadSeconds(), fastRate, fastRate);
      network = String.format(Locale.ROOT, "one machine of %d cores, the loopback itself free; the ranks' copies "
          + "and reductions at %.2f GB/s up to %d bytes and %.2f GB/s from %d bytes (fitted to the %d-rank RING "
          + "all-reduces of those sizes, %.0f and %.0f us measured)", cores, fastRate / 1e9, smallBytes,
          slowRate / 1e9, bigBytes, sizes[0], ring.get(smallBytes).medianUs, ring.get(bigBytes).medianUs);
    }
    // Latency: the smallest group's 4-byte DIRECT time, less what the model says it costs without latency.
    Map<Long, SweepReport.Row> direct = SweepReport.parseTable(first.resolve("ours-DIRECT.txt"));
    SweepReport.Row tiny = direct.get(4L);
    if (tiny == null) {
      throw new IllegalArgumentException("no 4-byte DIRECT row in " + first.resolve("ours-DIRECT.txt"));
    }
    // The CPU a message costs (system calls, wake-ups, a wait for a core when processes outnumber cores): from
    // the largest group's 4-byte RING all-reduce, 2(N-1) messages each way per rank. The two depend on each
    // other a little; a few rounds settle them.
    int largest = sizes[sizes.length - 1];
    SweepReport.Row ringTiny = SweepReport.parseTable(dir.resolve(rate + "-" + largest).resolve("ours-RING.txt"))
        .get(4L);
    double overhead = base.overheadSeconds();
    double latencyUs = 0;
    for (int round = 0; round < (ringTiny != null && largest > sizes[0] ? 6 : 1); round++) {
      NetworkModel m = withOverhead(base, overhead);
      double zero = NetworkSimulator.run(AlgorithmSelector.implementation(Algorithm.DIRECT), sizes[0], 1,
          Float.BYTES, segment, m, tiny.batch).seconds() / tiny.batch;
      latencyUs = Math.max(0, tiny.medianUs - zero * 1e6);
      if (ringTiny != null && largest > sizes[0]) {
        overhead = fitOverhead(withOverhead(base, overhead).latency(latencyUs * 1e-6), largest, ringTiny, segment);
      }
    }
    NetworkModel model = withOverhead(base, overhead).latency(latencyUs * 1e-6);
    network += String.format(Locale.ROOT, "; %.1f us of CPU per message (from the %d-rank 4-byte RING all-reduce, "
        + "%.1f us measured)", overhead * 1e6, largest, ringTiny != null ? ringTiny.medianUs : Double.NaN);

    StringBuilder md = new StringBuilder("# Simulated against measured all-reduce times\n\n");
    md.append(String.format(Locale.ROOT, "%s: %s; latency %.1f us (from the %d-rank 4-byte DIRECT all-reduce, "
        + "%.1f us measured). Times in us: medians of batches of all-reduces back to back over the batch size, "
        + "measured and simulated alike; ratio = simulated / measured, within +-%.0f%% unmarked.%n", dir, network,
        latencyUs, sizes[0], tiny.medianUs, BOUND * 100));
    int within = 0;
    int total = 0;
    double worst = 1;
    CollectiveConfig config = CollectiveConfig.defaults();
    AlgorithmSelector auto = new AlgorithmSelector(config.directMaxBytes(), config.directMaxRanks(),
        config.ringMinBytes(), Algorithm.AUTO);
    for (int n : sizes) {
      Path d = dir.resolve(rate + "-" + n);
      md.append(String.format(Locale.ROOT, "%n## %d ranks, one per host%n%n| bytes |", n));
      for (String a : ALGORITHMS) {
        md.append(' ').append(label(a)).append(" measured | simulated | ratio |");
      }
      md.append("\n|---:|");
      for (int i = 0; i < ALGORITHMS.length * 3; i++) {
        md.append("---:|");
      }
      md.append('\n');
      Map<Long, SweepReport.Row> ring = SweepReport.parseTable(d.resolve("ours-RING.txt"));
      for (long bytes : ring.keySet()) {
        md.append("| ").append(bytes).append(" |");
        for (String a : ALGORITHMS) {
          SweepReport.Row m = SweepReport.parseTable(d.resolve("ours-" + a + ".txt")).get(bytes);
          if (m == null) {
            md.append(" - | - | - |");
            continue;
          }
          AlgorithmChoice c = a.equals("f32") ? auto.select(Algorithm.AUTO, bytes, Placement.flat(n))
              : AlgorithmChoice.of(Algorithm.valueOf(a), null);
          // As measured: a batch of all-reduces back to back, timed together, over the batch's size.
          NetworkModel at = slowRate > 0 ? withRate(model, rate(bytes, fastRate, fastUpTo, slowRate, slowFrom)) : model;
          double sim = NetworkSimulator.run(AlgorithmSelector.implementation(c, Placement.flat(n)), n,
              (int) Math.max(1, bytes / Float.BYTES), Float.BYTES, segment, at, m.batch).seconds() * 1e6
              / m.batch;
          double ratio = sim / m.medianUs;
          boolean ok = Math.abs(ratio - 1) <= BOUND;
          within += ok ? 1 : 0;
          total++;
          worst = Math.max(worst, Math.max(ratio, 1 / ratio));
          md.append(String.format(Locale.ROOT, " %.1f | %.1f | %s |", m.medianUs, sim,
              String.format(Locale.ROOT, ok ? "%.2f" : "**%.2f**", ratio)));
        }
        md.append('\n');
      }
    }
    md.insert(md.indexOf("\n\n") + 2, String.format(Locale.ROOT, "%d of %d predictions within +-%.0f%% of the "
        + "measured median; the farthest off by %.2fx.%n%n", within, total, BOUND * 100, worst));
    Files.writeString(dir.resolve("validation.md"), md.toString());
    System.out.print(md);
  }

  /** The copy and reduction rate for a vector of {@code bytes}: fast up to one size, slow from another. */
  private static double rate(long bytes, double fast, long fastUpTo, double slow, long slowFrom) {
    if (bytes <= fastUpTo || slowFrom <= fastUpTo) {
      return fast;
    }
    if (bytes >= slowFrom) {
      return slow;
    }
    double f = Math.log((double) bytes / fastUpTo) / Math.log((double) slowFrom / fastUpTo);
    return fast * Math.pow(slow / fast, f);
  }

  private static NetworkModel withRate(NetworkModel m, double rate) {
    return m.cpu(m.overheadSeconds(), rate, rate);
  }

  /** The copy and reduction rate at which the simulated RING all-reduce of {@code n} ranks takes as measured. */
  private static double fitRate(NetworkModel m, int n, SweepReport.Row measured, int segment) {
    double lo = 1e7;
    double hi = 1e12;
    for (int i = 0; i < 40; i++) {
      double mid = Math.sqrt(lo * hi);
      double t = NetworkSimulator.run(AlgorithmSelector.implementation(Algorithm.RING), n,
          (int) (measured.bytes / Float.BYTES), Float.BYTES, segment, withRate(m, mid), measured.batch).seconds()
          / measured.batch;
      if (t * 1e6 > measured.medianUs) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return hi;
  }

  private static NetworkModel withOverhead(NetworkModel m, double overhead) {
    return m.cpu(overhead, m.reduceBytesPerSecond(), m.copyBytesPerSecond());
  }

  /** The per-message CPU time at which the simulated 4-byte RING all-reduce of {@code n} ranks takes as measured. */
  private static double fitOverhead(NetworkModel m, int n, SweepReport.Row measured, int segment) {
    double lo = 1e-8;
    double hi = 1e-2;
    for (int i = 0; i < 40; i++) {
      double mid = Math.sqrt(lo * hi);
      double t = NetworkSimulator.run(AlgorithmSelector.implementation(Algorithm.RING), n, 1, Float.BYTES, segment,
          withOverhead(m, mid), measured.batch).seconds() / measured.batch;
      if (t * 1e6 > measured.medianUs) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return Math.sqrt(lo * hi);
  }

  private static String label(String a) {
    return a.equals("f32") ? "AUTO" : a.equals("HALVING_DOUBLING") ? "HD" : a;
  }
}
