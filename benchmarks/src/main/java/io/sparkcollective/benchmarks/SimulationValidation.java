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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.DoubleFunction;

/**
 * The simulator's predictions against measured all-reduce times (benchmarks/README.md "Scale on a simulated
 * network"): for every group size of a measurement folder, every algorithm measured forced ({@code ours-RING.txt},
 * {@code ours-HALVING_DOUBLING.txt}, {@code ours-DIRECT.txt}, {@code ours-RECURSIVE_DOUBLING.txt}, the tables
 * TcpSweepWorker prints) and AUTO
 * ({@code ours-f32.txt}; later rounds of the same sitting as {@code ours-RING.2.txt} and so on, of which each
 * cell takes the median), the simulated time of the same all-reduce and its ratio to the measured median.
 *
 * <p>The network is taken from measurements, not from the nominal rate: the link rate from iperf3 between two
 * of the hosts ({@code iperf.json}: goodput, so TCP/IP's headers are in it); the CPU a message costs from the
 * smallest group's 4-byte DIRECT all-reduce and the context switch from the largest group's 4-byte
 * HALVING_DOUBLING one (every rank on the machine's cores; not the RING's, whose 2(N-1) dependent 4-byte steps
 * each wait through the scheduler and would charge that wait to every algorithm's resumes). On loopback, where
 * the kernel's copies are the ranks' own CPU work, also the rates of the bytes through the kernel (the smallest
 * group's RING all-reduces of the largest size and of a 64th of it), of a rank's work on its own vector in memory
 * (its DIRECT all-reduces of the same two sizes) and the share of its rate a rank moves bytes at once it had to
 * wait for a core (the largest group's largest RING all-reduce). For {@code benchmarks/bed/bench.sh}'s output:
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
  /** What a folder may hold, in column order; those without a table in the smallest group's folder are left out. */
  private static final String[] ALGORITHMS = {"RING", "HALVING_DOUBLING", "DIRECT", "RECURSIVE_DOUBLING", "f32"};
  /** How close the model must come to reality. */
  private static final double BOUND = 0.25;

  private SimulationValidation() {}

  public static void main(String[] args) throws IOException {
    Path dir = Paths.get(args[0]);
    String rate = args[1];
    int[] sizes = new int[args.length - 2];
    for (int i = 2; i < args.length; i++) {
      sizes[i - 2] = Integer.parseInt(args[i]);
    }
    // The segment size the measurements ran with: the default unless they were taken with another
    // (-DsegmentBytes=262144 for those stored before 512 KiB became the default).
    int segmentBytes = Integer.getInteger("segmentBytes", CollectiveConfig.defaults().segmentBytes());
    int segment = segmentBytes / Float.BYTES;
    Path first = dir.resolve(rate + "-" + sizes[0]);
    double goodput = SweepReport.iperfGbytesPerSecond(first.resolve("iperf.json"));
    // A rate in tc's units is the bed's (its links shaped by tbf); any other name (loopback) has no nominal rate.
    boolean bed = rate.matches("[0-9.]+[kmg]?bit");
    String network;
    NetworkModel base;
    double fastRate = 0;
    double slowRate = 0;
    SweepReport.Row bigRing = null;
    SweepReport.Row smallRing = null;
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
      Map<Long, SweepReport.Row> ring = SweepReport.parseRounds(first, "ours-RING");
      long bigBytes = ring.keySet().stream().mapToLong(Long::longValue).max().getAsLong();
      long smallBytes = ring.keySet().stream().mapToLong(Long::longValue).filter(b -> b <= bigBytes / 64).max()
          .orElse(bigBytes);
      // A rank's work on memory alone (a stashed copy of its own vector) runs at the model's memory rates; what
      // is fitted is the rate of the bytes that go through the kernel.
      base = withMemory(NetworkModel.of(10_000, 0).machineCores(cores), 1);
      slowFrom = bigBytes;
      fastUpTo = smallBytes;
      bigRing = ring.get(bigBytes);
      smallRing = ring.get(smallBytes);
      network = String.format(Locale.ROOT, "one machine of %d cores, the loopback itself free", cores);
    }
    // Every cost is CPU time of the one machine (no latency of its own: the fitted latency came out 0 on the bed
    // too): the CPU a message costs on each side, from the smallest group's 4-byte DIRECT all-reduce (one message
    // each way, a core per rank); what ranks that outnumber the cores pay to resume on a core another rank used
    // (the context switch, the caches), from the largest group's 4-byte HALVING_DOUBLING all-reduce (a wait per
    // step, log2 of the group's steps);
    // on loopback the copy rates too (above). They depend on each other a little; a few rounds settle them, each
    // fitted with the others' latest values, so that every fitted point is predicted as measured.
    SweepReport.Row tiny = SweepReport.parseRounds(first, "ours-DIRECT").get(4L);
    if (tiny == null) {
      throw new IllegalArgumentException("no 4-byte DIRECT row in " + first.resolve("ours-DIRECT.txt"));
    }
    int largest = sizes[sizes.length - 1];
    SweepReport.Row hdTiny = SweepReport.parseRounds(dir.resolve(rate + "-" + largest), "ours-HALVING_DOUBLING")
        .get(4L);
    boolean fitSwitch = hdTiny != null && largest > sizes[0];
    // On loopback two more, fitted like the copy rate: how fast a rank copies and combines its own vector in
    // memory (its stashed copy in DIRECT), against the bytes through the kernel, from the smallest group's DIRECT
    // all-reduces of the two sizes the copy rate is fitted at (the model's two memory rates scaled alike, and taken
    // between the two sizes as the copy rate is); and the share of its rate a rank moves bytes at once it had to
    // wait for a core, from the largest group's largest RING all-reduce (every rank copying at once, more ranks
    // than cores).
    Map<Long, SweepReport.Row> direct = SweepReport.parseRounds(first, "ours-DIRECT");
    SweepReport.Row directMid = bigRing == null ? null : direct.get(fastUpTo);
    SweepReport.Row directBig = bigRing == null ? null : direct.get(slowFrom);
    int cores = base.machineCores();
    SweepReport.Row ringCrowded = bed || largest <= cores ? null
        : SweepReport.parseRounds(dir.resolve(rate + "-" + largest), "ours-RING").get(slowFrom);
    double memory = 1;
    double memorySlow = 1;
    double overhead = base.overheadSeconds();
    double switchSeconds = 0;
    double crowded = 1;
    for (int round = 0; round < 6; round++) {
      NetworkModel at = base.machineCores(cores, switchSeconds).crowded(crowded);
      if (bigRing != null) {
        slowRate = fit(r -> withRate(at, r), Algorithm.RING, sizes[0], bigRing, segment, 1e7, 1e12, false);
        fastRate = fit(r -> withRate(at, r), Algorithm.RING, sizes[0], smallRing, segment, 1e7, 1e12, false);
        base = base.cpu(overhead, fastRate, fastRate);
      }
      NetworkModel now = base.machineCores(cores, switchSeconds).crowded(crowded);
      overhead = fit(o -> withOverhead(now, o), Algorithm.DIRECT, sizes[0], tiny, segment, 1e-8, 1e-2, true);
      base = withOverhead(base, overhead);
      if (fitSwitch) {
        NetworkModel then = base.crowded(crowded);
        switchSeconds = fit(w -> then.machineCores(cores, w), Algorithm.HALVING_DOUBLING, largest, hdTiny, segment,
            1e-9, 1e-2, true);
      }
      if (directMid != null) {
        NetworkModel then = base.machineCores(cores, switchSeconds).crowded(crowded);
        memory = fit(m -> withMemory(then, m), Algorithm.DIRECT, sizes[0], directMid, segment, 0.01, 100, false);
        NetworkModel slow = withRate(then, slowRate);
        memorySlow = directBig == null ? memory
            : fit(m -> withMemory(slow, m), Algorithm.DIRECT, sizes[0], directBig, segment, 0.01, 100, false);
        base = withMemory(base, memory);
      }
      if (ringCrowded != null) {
        NetworkModel then = withRate(base.machineCores(cores, switchSeconds), slowRate);
        crowded = fit(then::crowded, Algorithm.RING, largest, ringCrowded, segment, 0.05, 1, false);
      }
    }
    NetworkModel model = base.machineCores(cores, switchSeconds).crowded(crowded);
    if (bigRing != null) {
      network += String.format(Locale.ROOT, "; the ranks' copies and reductions at %.2f GB/s up to %d bytes and "
          + "%.2f GB/s from %d bytes (fitted to the %d-rank RING all-reduces of those sizes, %.0f and %.0f us "
          + "measured)", fastRate / 1e9, fastUpTo, slowRate / 1e9, slowFrom, sizes[0], smallRing.medianUs,
          bigRing.medianUs);
    }
    network += String.format(Locale.ROOT, "; %.1f us of CPU per message on each side (from the %d-rank 4-byte "
        + "DIRECT all-reduce, %.1f us measured); %.1f us to resume on a core another rank used (from the %d-rank "
        + "4-byte HALVING_DOUBLING all-reduce, %.1f us measured); no latency beyond the CPU", overhead * 1e6,
        sizes[0], tiny.medianUs, switchSeconds * 1e6, largest, hdTiny != null ? hdTiny.medianUs : Double.NaN);
    if (directMid != null) {
      network += String.format(Locale.ROOT, "; a rank's own vector copied and combined in memory at %.1f and %.1f "
          + "GB/s up to %d bytes and %.1f and %.1f GB/s from %d bytes (fitted to the %d-rank DIRECT all-reduces of "
          + "those sizes, %.0f and %s us measured)", memory * Tuning.MODEL_COPY_BYTES_PER_SECOND / 1e9,
          memory * Tuning.MODEL_REDUCE_BYTES_PER_SECOND / 1e9, fastUpTo,
          memorySlow * Tuning.MODEL_COPY_BYTES_PER_SECOND / 1e9,
          memorySlow * Tuning.MODEL_REDUCE_BYTES_PER_SECOND / 1e9, slowFrom, sizes[0], directMid.medianUs,
          directBig == null ? "no" : String.format(Locale.ROOT, "%.0f", directBig.medianUs));
    }
    if (ringCrowded != null) {
      network += String.format(Locale.ROOT, "; a rank that had to wait for a core moves its bytes at %.2f of its "
          + "rate (from the %d-rank %d-byte RING all-reduce, %.0f us measured)", crowded, largest, ringCrowded.bytes,
          ringCrowded.medianUs);
    }

    StringBuilder md = new StringBuilder("# Simulated against measured all-reduce times\n\n");
    md.append(String.format(Locale.ROOT, "%s: %s. Times in us: medians of batches of all-reduces back to back over "
        + "the batch size, measured and simulated alike (measured: the median of the sitting's rounds where it has "
        + "several); ratio = simulated / measured, within +-%.0f%% unmarked.%n", dir, network, BOUND * 100));
    int within = 0;
    int total = 0;
    double worst = 1;
    CollectiveConfig config = CollectiveConfig.defaults();
    AlgorithmSelector auto = new AlgorithmSelector(config.directMaxBytes(), config.directMaxRanks(),
        config.ringMinBytes(), Algorithm.AUTO);
    List<String> algorithms = new ArrayList<>();
    for (String a : ALGORITHMS) {
      if (Files.exists(first.resolve("ours-" + a + ".txt"))) {
        algorithms.add(a);
      }
    }
    for (int n : sizes) {
      Path d = dir.resolve(rate + "-" + n);
      md.append(String.format(Locale.ROOT, "%n## %d ranks, one per host%n%n| bytes |", n));
      for (String a : algorithms) {
        md.append(' ').append(label(a)).append(" measured | simulated | ratio |");
      }
      md.append("\n|---:|");
      for (int i = 0; i < algorithms.size() * 3; i++) {
        md.append("---:|");
      }
      md.append('\n');
      Map<String, Map<Long, SweepReport.Row>> measured = new HashMap<>();
      for (String a : algorithms) {
        measured.put(a, SweepReport.parseRounds(d, "ours-" + a));
      }
      for (long bytes : measured.get("RING").keySet()) {
        md.append("| ").append(bytes).append(" |");
        for (String a : algorithms) {
          SweepReport.Row m = measured.get(a).get(bytes);
          if (m == null) {
            md.append(" - | - | - |");
            continue;
          }
          AlgorithmChoice c = a.equals("f32") ? auto.select(Algorithm.AUTO, bytes, Placement.flat(n))
              : AlgorithmChoice.of(Algorithm.valueOf(a), null);
          // As measured: a batch of all-reduces back to back, timed together, over the batch's size.
          NetworkModel at = slowRate > 0 ? withRate(model, rate(bytes, fastRate, fastUpTo, slowRate, slowFrom)) : model;
          if (directMid != null) {
            at = withMemory(at, rate(bytes, memory, fastUpTo, memorySlow, slowFrom));
          }
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

  /** The model with its memory rates at {@code scale} times the cost model's ({@link Tuning}'s MODEL_ rates). */
  private static NetworkModel withMemory(NetworkModel m, double scale) {
    return m.memory(scale * Tuning.MODEL_REDUCE_BYTES_PER_SECOND, scale * Tuning.MODEL_COPY_BYTES_PER_SECOND);
  }

  private static NetworkModel withOverhead(NetworkModel m, double overhead) {
    return m.cpu(overhead, m.reduceBytesPerSecond(), m.copyBytesPerSecond());
  }

  /**
   * The value of a model parameter, between {@code lo} and {@code hi} (on a logarithmic scale), at which the
   * simulated all-reduce of {@code n} ranks takes as long as measured: the simulated time grows with the parameter
   * ({@code growing}: a cost) or shrinks with it (a rate). A measurement outside what the range can reach gives
   * the range's end.
   */
  private static double fit(DoubleFunction<NetworkModel> model, Algorithm algorithm, int n,
      SweepReport.Row measured, int segment, double lo, double hi, boolean growing) {
    int length = (int) Math.max(1, measured.bytes / Float.BYTES);
    for (int i = 0; i < 50; i++) {
      double mid = Math.sqrt(lo * hi);
      double t = NetworkSimulator.run(AlgorithmSelector.implementation(algorithm), n, length, Float.BYTES, segment,
          model.apply(mid), measured.batch).seconds() / measured.batch;
      if ((t * 1e6 > measured.medianUs) == growing) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return Math.sqrt(lo * hi);
  }

  private static String label(String a) {
    return a.equals("f32") ? "AUTO" : a.equals("HALVING_DOUBLING") ? "HD" : a.equals("RECURSIVE_DOUBLING") ? "RD" : a;
  }
}
