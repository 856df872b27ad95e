package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A seeded fault campaign on real executor JVMs (local-cluster, 2 executors x 2 cores): a training-like job
 * (several stages, several all-reduces per stage, the model carried from stage to stage) in which one
 * injection per run hits a random rank at a random point: a task exception, an executor halt, a job-group
 * cancellation, a task kill, or a frozen executor (SIGSTOP), before the rank joins its group, while it joins,
 * between two all-reduces or in the middle of one. For each it records how long after the fault every
 * surviving peer's task left its call, whether Spark's retry (or, after a cancellation, the resubmitted
 * stage) gives a model bitwise equal to a fault-free run, and the executors' threads, file descriptors and
 * direct memory afterwards.
 *
 * <p>{@code mvn verify} runs a short campaign that covers every kind; {@code -Dcampaign.injections=100} (and
 * {@code -Dcampaign.seed=N}) runs the full one (see README). The table goes to
 * {@code target/fault-campaign.md}.
 */
@Timeout(3600)
class FaultCampaignTest {
  /** Where the tests' executors leave their reports; removed after the class. */
  @org.junit.jupiter.api.io.TempDir
  static Path scratch;

  private static final int INJECTIONS = Integer.getInteger("campaign.injections", 20);
  private static final long SEED = Long.getLong("campaign.seed", 20261201L);
  /** Only these kinds (comma-separated names), e.g. -Dcampaign.kinds=FREEZE,HALT; all when unset. */
  private static final String KINDS = System.getProperty("campaign.kinds", "");
  private static final int TASKS = 4;
  private static final int STAGES = 2;
  private static final int STEPS = 4;
  /** 16 MiB of floats: an all-reduce lasts long enough (tens of ms) for a fault to land in its middle. */
  private static final int LENGTH = 1 << 22;
  private static final long HEARTBEAT_TIMEOUT_MS = 3000;
  /** How soon every surviving peer must have left its call: 2 s, or the heartbeat timeout + 1 s if frozen. */
  private static final long BOUND_MS = 2000;
  private static final long FROZEN_BOUND_MS = HEARTBEAT_TIMEOUT_MS + 1000;
  /**
   * The library's threads an executor may have: the endpoint's progress thread, its Netty I/O threads
   * (transport.ioThreads, 2, started as connections come), the plugin's driver asker and its threads that
   * form groups at task start (one per task slot at most: 2 here). Anything more (an async thread of a
   * communicator that outlived its task, a formation that never stopped, ...) is a leak.
   */
  private static final int FIXED_THREADS = 6;
  /** A run that has not finished by then hangs. */
  private static final long RUN_TIMEOUT_MS = 150_000;

  private static JavaSparkContext sc;

  enum Kind { THROW, HALT, CANCEL_JOB, KILL_TASK, FREEZE }

  enum Point { BEFORE_JOIN, DURING_JOIN, BETWEEN_OPS, MID_OP }

  /** Every kind at every point where it means something (a frozen rank before its join is indistinguishable
   * from a slow one: only the join timeout bounds that, see README). */
  private static final Object[][] COMBINATIONS = {
      {Kind.THROW, Point.BEFORE_JOIN}, {Kind.THROW, Point.DURING_JOIN}, {Kind.THROW, Point.BETWEEN_OPS},
      {Kind.THROW, Point.MID_OP}, {Kind.HALT, Point.BEFORE_JOIN}, {Kind.HALT, Point.DURING_JOIN},
      {Kind.HALT, Point.BETWEEN_OPS}, {Kind.HALT, Point.MID_OP}, {Kind.CANCEL_JOB, Point.BEFORE_JOIN},
      {Kind.CANCEL_JOB, Point.BETWEEN_OPS}, {Kind.CANCEL_JOB, Point.MID_OP}, {Kind.KILL_TASK, Point.BEFORE_JOIN},
      {Kind.KILL_TASK, Point.BETWEEN_OPS}, {Kind.KILL_TASK, Point.MID_OP}, {Kind.FREEZE, Point.BETWEEN_OPS},
      {Kind.FREEZE, Point.MID_OP},
  };

  /** One planned fault. */
  static final class Injection {
    final Kind kind;
    final Point point;
    final int stage;
    final int step;
    final int victim;
    final boolean interrupt;
    final int delayMs;

    Injection(Kind kind, Point point, SplittableRandom rnd) {
      this.kind = kind;
      this.point = point;
      this.stage = rnd.nextInt(STAGES);
      // Between ops means before op `step`, so there is always an op the peers wait in.
      this.step = point == Point.BETWEEN_OPS ? 1 + rnd.nextInt(STEPS - 1) : rnd.nextInt(STEPS);
      this.victim = rnd.nextInt(TASKS);
      this.interrupt = rnd.nextBoolean();
      this.delayMs = rnd.nextInt(4);
    }

    @Override
    public String toString() {
      return kind + " " + point + " stage " + stage + (point == Point.BETWEEN_OPS || point == Point.MID_OP
          ? " op " + step : "") + " rank " + victim
          + (kind == Kind.CANCEL_JOB || kind == Kind.KILL_TASK ? (interrupt ? " interrupting" : " flag only") : "");
    }
  }

  @BeforeAll
  static void start() {
    SparkConf conf = SparkTests.withPlugin("local-cluster[2,2,1024]", "fault-campaign")
        .set("spark.collective.transport.heartbeatIntervalMs", "500")
        .set("spark.collective.transport.heartbeatTimeoutMs", Long.toString(HEARTBEAT_TIMEOUT_MS));
    sc = new JavaSparkContext(conf);
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  // ------------------------------------------------------------------------------------------- the job

  /**
   * One step's gradient of {@code rank}: small integers derived from the model's bits, so every sum is exact
   * in any order and the model after a retry must equal the fault-free one bit for bit, whatever algorithm
   * or placement the retried group gets.
   */
  static float[] gradient(float[] w, int rank, int stage, int step) {
    float[] g = new float[w.length];
    int salt = rank * 7919 + stage * 104_729 + step * 1_299_709;
    for (int i = 0; i < w.length; i++) {
      int bits = (int) (w[i] * 1024f) * 31 + i * 17 + salt;
      g[i] = ((bits ^ (bits >>> 7)) & 15) - 7;
    }
    return g;
  }

  /** {@code w -= g / 1024}: exact (multiples of 2^-10 far below 2^14). */
  static void update(float[] w, float[] g) {
    for (int i = 0; i < w.length; i++) {
      w[i] -= g[i] / 1024f;
    }
  }

  /** What a fault-free run gives, computed on the driver without Spark or the plugin. */
  private static float[] reference() {
    float[] w = new float[LENGTH];
    for (int stage = 0; stage < STAGES; stage++) {
      for (int step = 0; step < STEPS; step++) {
        float[] sum = new float[LENGTH];
        for (int r = 0; r < TASKS; r++) {
          float[] g = gradient(w, r, stage, step);
          for (int i = 0; i < LENGTH; i++) {
            sum[i] += g[i];
          }
        }
        update(w, sum);
      }
    }
    return w;
  }

  /**
   * One barrier stage of the job: STEPS all-reduces, each rank updating its copy of the model. With
   * {@code armed}, attempt 0 carries {@code inj} (its kind, point, op and rank as numbers, so the closure
   * captures nothing else); {@code dir} collects what tasks see.
   */
  private static float[] runStage(float[] model, int stage, Injection inj, boolean armed, String dir) {
    int kind = inj == null ? -1 : inj.kind.ordinal();
    int point = inj == null ? -1 : inj.point.ordinal();
    int step = inj == null ? -1 : inj.step;
    int victim = inj == null ? -1 : inj.victim;
    int delayMs = inj == null ? 0 : inj.delayMs;
    boolean hit = armed && inj != null && inj.stage == stage;
    List<float[]> out = Barrier.mapPartitions(SparkTests.partitions(sc, TASKS), it -> {
      BarrierTaskContext task = BarrierTaskContext.get();
      int rank = task.partitionId();
      boolean record = hit && task.stageAttemptNumber() == 0;
      boolean mine = record && rank == victim;
      if (record) {
        SparkTests.writeMarker(dir, "start-" + rank, org.apache.spark.SparkEnv.get().executorId() + " "
            + ProcessHandle.current().pid());
      }
      try {
        float[] w = model.clone();
        if (mine && point == Point.BEFORE_JOIN.ordinal()) {
          fire(task, kind, dir, null);
        }
        Thread background = null;
        if (mine && point == Point.DURING_JOIN.ordinal()) {
          Thread.sleep(300); // the peers are forming the group by now
          background = fireSoon(Thread.currentThread(), kind, delayMs, dir);
        }
        Communicator comm = Collective.communicator();
        for (int s = 0; s < STEPS; s++) {
          if (mine && point == Point.BETWEEN_OPS.ordinal() && s == step) {
            fire(task, kind, dir, null);
          }
          float[] g = gradient(w, rank, stage, s);
          if (mine && point == Point.MID_OP.ordinal() && s == step) {
            CompletableFuture<Void> inFlight = comm.allReduceAsync(DataBuffer.of(g), ReduceOp.SUM,
                io.sparkcollective.core.api.CollectiveOptions.DEFAULT);
            Thread.sleep(delayMs + 2);
            fire(task, kind, dir, inFlight);
          }
          comm.allReduce(g, ReduceOp.SUM);
          update(w, g);
        }
        if (background != null) {
          background.join();
        }
        if (record) {
          SparkTests.writeMarker(dir, "done-" + rank, Long.toString(System.currentTimeMillis()));
        }
        return Collections.singletonList(w).iterator();
      } catch (Throwable t) {
        if (record) {
          SparkTests.writeMarker(dir, "failed-" + rank, System.currentTimeMillis() + " " + t);
        }
        throw t;
      }
    }).collect();
    for (float[] w : out) {
      if (!Arrays.equals(w, out.get(0))) {
        throw new AssertionError("ranks of stage " + stage + " hold different models");
      }
    }
    return out.get(0);
  }

  /** The victim's fault, on its task thread. */
  private static void fire(BarrierTaskContext task, int kind, String dir, CompletableFuture<Void> inFlight)
      throws Exception {
    if (kind == Kind.THROW.ordinal()) {
      SparkTests.writeMarker(dir, "fault", Long.toString(System.currentTimeMillis()));
      throw new IllegalStateException("injected task failure" + (inFlight != null ? " with an all-reduce in flight"
          : ""));
    }
    if (kind == Kind.HALT.ordinal()) {
      SparkTests.writeMarker(dir, "fault", Long.toString(System.currentTimeMillis()));
      Runtime.getRuntime().halt(1);
    }
    // The driver acts (cancel, kill, SIGSTOP) once it sees the marker; the task waits as user code would.
    SparkTests.writeMarker(dir, "marker", task.taskAttemptId() + " " + ProcessHandle.current().pid());
    long until = System.currentTimeMillis() + 60_000;
    while (!task.isInterrupted() && System.currentTimeMillis() < until) {
      Thread.sleep(5);
    }
    task.killTaskIfInterrupted();
    throw new IllegalStateException("the driver did not act on the marker within 60 s");
  }

  /** A fault fired from another thread a few ms from now, while the task thread joins its group. */
  private static Thread fireSoon(Thread taskThread, int kind, int delayMs, String dir) {
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(delayMs);
        SparkTests.writeMarker(dir, "fault", Long.toString(System.currentTimeMillis()));
        if (kind == Kind.HALT.ordinal()) {
          Runtime.getRuntime().halt(1);
        }
        taskThread.interrupt(); // the join (or the first call) throws on the task thread
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }, "campaign-fault");
    t.setDaemon(true);
    t.start();
    return t;
  }

  // ---------------------------------------------------------------------------------------- the driver

  /** What one injected run showed. */
  static final class Outcome {
    boolean correct;
    boolean hung;
    boolean resubmitted;
    long slowestPeerMs = -1;
    final List<String> problems = new ArrayList<>();
    double seconds;
  }

  /** Acts for the driver-side kinds once the victim's marker appears; records when it acted. */
  private static final class DriverSide extends Thread {
    private final Injection inj;
    private final Path dir;
    private final String jobGroup;
    private volatile boolean done;
    volatile long actedAt;
    volatile long frozenPid = -1;

    DriverSide(Injection inj, Path dir, String jobGroup) {
      super("campaign-driver-side");
      setDaemon(true);
      this.inj = inj;
      this.dir = dir;
      this.jobGroup = jobGroup;
    }

    @Override
    public void run() {
      try {
        Path marker = dir.resolve("marker");
        while (!done && !Files.exists(marker)) {
          Thread.sleep(2);
        }
        if (done) {
          return;
        }
        String[] m = Files.readString(marker).trim().split(" ");
        long taskId = Long.parseLong(m[0]);
        long pid = Long.parseLong(m[1]);
        actedAt = System.currentTimeMillis();
        switch (inj.kind) {
          case CANCEL_JOB:
            sc.sc().cancelJobGroup(jobGroup);
            break;
          case KILL_TASK:
            sc.sc().killTaskAttempt(taskId, inj.interrupt, "killed by the fault campaign");
            break;
          case FREEZE:
            signal("STOP", pid);
            frozenPid = pid;
            // Keep it frozen until its peers have all failed (by missing heartbeats) or well past the bound.
            long until = actedAt + FROZEN_BOUND_MS + 3000;
            while (System.currentTimeMillis() < until && !peersFailed()) {
              Thread.sleep(10);
            }
            signal("CONT", pid);
            frozenPid = -1;
            break;
          default:
            throw new IllegalStateException("no driver side for " + inj.kind);
        }
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }

    private boolean peersFailed() throws IOException {
      Map<Integer, String> executors = starts(dir);
      String frozen = executors.get(inj.victim);
      for (Map.Entry<Integer, String> e : executors.entrySet()) {
        if (!e.getValue().equals(frozen) && !Files.exists(dir.resolve("failed-" + e.getKey()))) {
          return false;
        }
      }
      return true;
    }

    void finish() throws InterruptedException, IOException {
      done = true;
      join(30_000);
      if (frozenPid > 0) {
        signal("CONT", frozenPid);
      }
    }
  }

  private static void signal(String sig, long pid) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
    if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("kill -" + sig + " " + pid + " failed");
    }
  }

  /** Executor id of every rank that started in the injected attempt. */
  private static Map<Integer, String> starts(Path dir) throws IOException {
    Map<Integer, String> m = new HashMap<>();
    try (java.util.stream.Stream<Path> files = Files.list(dir)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        String n = p.getFileName().toString();
        if (n.startsWith("start-") && !n.endsWith(".tmp")) {
          m.put(Integer.parseInt(n.substring(6)), Files.readString(p).split(" ")[0]);
        }
      }
    }
    return m;
  }

  /** Runs the whole job with {@code inj}; a cancelled stage is resubmitted unarmed, as its user would. */
  private static Outcome run(Injection inj, float[] expected) throws Exception {
    Path dir = Files.createTempDirectory(scratch, "campaign");
    String jobGroup = "campaign-" + System.nanoTime();
    Outcome o = new Outcome();
    DriverSide driverSide = null;
    if (inj != null && (inj.kind == Kind.CANCEL_JOB || inj.kind == Kind.KILL_TASK || inj.kind == Kind.FREEZE)) {
      driverSide = new DriverSide(inj, dir, jobGroup);
      driverSide.start();
    }
    long start = System.nanoTime();
    java.util.concurrent.ScheduledExecutorService watchdog = java.util.concurrent.Executors
        .newSingleThreadScheduledExecutor();
    java.util.concurrent.ScheduledFuture<?> hang = watchdog.schedule(() -> {
      o.hung = true;
      sc.sc().cancelAllJobs();
    }, RUN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    float[] model = new float[LENGTH];
    try {
      sc.setJobGroup(jobGroup, "fault campaign: " + inj, inj != null && inj.kind == Kind.CANCEL_JOB && inj.interrupt);
      for (int stage = 0; stage < STAGES; stage++) {
        try {
          model = runStage(model, stage, inj, true, dir.toString());
        } catch (Exception e) { // SparkException, checked but not declared by Scala
          // The job of a cancelled stage (or of a killed task, if Spark does not retry it) fails.
          if (o.hung || inj == null || inj.stage != stage
              || !(inj.kind == Kind.CANCEL_JOB || inj.kind == Kind.KILL_TASK)) {
            throw e;
          }
          o.resubmitted = true;
          sc.setJobGroup(jobGroup + "-again", "fault campaign, resubmitted: " + inj, false);
          model = runStage(model, stage, inj, false, dir.toString());
        }
      }
      o.correct = Arrays.equals(expected, model);
      if (!o.correct) {
        o.problems.add("the model differs from the fault-free run");
      }
    } catch (Exception e) {
      o.problems.add((o.hung ? "hung; " : "") + "the run failed: " + e);
    } finally {
      hang.cancel(false);
      watchdog.shutdownNow();
      sc.clearJobGroup();
      if (driverSide != null) {
        driverSide.finish();
      }
    }
    o.seconds = (System.nanoTime() - start) / 1e9;
    if (inj != null) {
      judgePeers(inj, dir, driverSide, o);
    }
    try (java.util.stream.Stream<Path> files = Files.list(dir)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        Files.deleteIfExists(p);
      }
    }
    Files.deleteIfExists(dir);
    return o;
  }

  /** Every surviving peer left its call within the bound after the fault. */
  private static void judgePeers(Injection inj, Path dir, DriverSide driverSide, Outcome o)
      throws IOException, InterruptedException {
    long faultAt = driverSide != null ? driverSide.actedAt : Files.exists(dir.resolve("fault"))
        ? Long.parseLong(Files.readString(dir.resolve("fault")).trim()) : 0;
    if (faultAt == 0) {
      o.problems.add("the fault never fired");
      return;
    }
    Map<Integer, String> executors = starts(dir);
    String victimExecutor = executors.get(inj.victim);
    boolean executorGoes = inj.kind == Kind.HALT || inj.kind == Kind.FREEZE;
    long bound = inj.kind == Kind.FREEZE ? FROZEN_BOUND_MS : BOUND_MS;
    for (Map.Entry<Integer, String> e : executors.entrySet()) {
      int rank = e.getKey();
      if (rank == inj.victim || (executorGoes && e.getValue().equals(victimExecutor))) {
        continue;
      }
      Path failed = dir.resolve("failed-" + rank);
      Path done = dir.resolve("done-" + rank);
      // A cancelled job returns before its tasks are done: give their reports (which carry their own time) a while.
      long waitUntil = System.currentTimeMillis() + 10_000;
      while (!Files.exists(failed) && !Files.exists(done) && System.currentTimeMillis() < waitUntil) {
        Thread.sleep(10);
      }
      if (Files.exists(done)) {
        continue; // its last all-reduce completed before the fault: it was waiting for nothing
      }
      if (!Files.exists(failed)) {
        o.problems.add("rank " + rank + " never reported leaving its call");
        continue;
      }
      String report = Files.readString(failed);
      long ms = Long.parseLong(report.substring(0, report.indexOf(' '))) - faultAt;
      o.slowestPeerMs = Math.max(o.slowestPeerMs, ms);
      if (ms > bound) {
        o.problems.add("rank " + rank + " left its call " + ms + " ms after the fault (bound " + bound + "): "
            + report);
      }
      if (!report.contains("io.sparkcollective.core.api.") && !report.contains("TaskKilledException")) {
        o.problems.add("rank " + rank + " failed with something other than the library's exception: " + report);
      }
    }
    // Every rank judged: all started, but for the victim's executor mates that a halt may take before they do.
    long elsewhere = executors.values().stream().filter(x -> !x.equals(victimExecutor)).count();
    if (inj.kind == Kind.HALT ? elsewhere < TASKS / 2 : executors.size() < TASKS) {
      o.problems.add("only " + executors.size() + " ranks started: " + executors);
    }
  }

  /** Threads named collective-*, open file descriptors, direct bytes: of the executor a task runs in. */
  private static long[] executorResources() throws IOException {
    long threads = Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("collective-")).count();
    long fds;
    try (java.util.stream.Stream<Path> s = Files.list(Paths.get("/proc/self/fd"))) {
      fds = s.count();
    }
    long direct = io.netty.util.internal.PlatformDependent.usedDirectMemory();
    for (java.lang.management.BufferPoolMXBean b
        : java.lang.management.ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)) {
      if (b.getName().equals("direct")) {
        direct += b.getMemoryUsed();
      }
    }
    return new long[] {threads, fds, direct};
  }

  /** Executor id -> resources, once per executor, from a small barrier stage that uses every slot. */
  private static Map<String, long[]> probe() {
    List<String> seen = Barrier.mapPartitions(SparkTests.partitions(sc, TASKS), it -> {
      Collective.communicator().barrier();
      long[] r = executorResources();
      return Collections.singletonList(org.apache.spark.SparkEnv.get().executorId() + " " + r[0] + " " + r[1] + " "
          + r[2]).iterator();
    }).collect();
    Map<String, long[]> m = new HashMap<>();
    for (String s : seen) {
      String[] f = s.split(" ");
      long[] r = {Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3])};
      m.merge(f[0], r, (a, b) -> new long[] {Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.max(a[2], b[2])});
    }
    return m;
  }

  @Test
  void shouldEndEveryInjectionInTheFaultFreeResultWithPeersFailingFastAndNoLeaks() throws Exception {
    float[] expected = reference();
    Outcome clean = run(null, expected);
    SplittableRandom rnd = new SplittableRandom(SEED);
    List<Object[]> combinations = new ArrayList<>();
    for (Object[] c : COMBINATIONS) {
      if (KINDS.isEmpty() || Arrays.asList(KINDS.split(",")).contains(c[0].toString())) {
        combinations.add(c);
      }
    }
    // Every combination once, then random ones.
    List<Injection> plan = new ArrayList<>();
    for (int i = 0; i < INJECTIONS; i++) {
      Object[] c = combinations.get(i < combinations.size() ? i : rnd.nextInt(combinations.size()));
      plan.add(new Injection((Kind) c[0], (Point) c[1], rnd));
    }
    StringBuilder table = new StringBuilder("| # | injection | result | slowest surviving peer (ms) | run (s) |"
        + " problems |\n|---|---|---|---|---|---|\n");
    Map<String, List<long[]>> resources = new HashMap<>();
    List<String> failures = new ArrayList<>();
    Map<Kind, List<Long>> peerMs = new java.util.EnumMap<>(Kind.class);
    for (int i = 0; i < plan.size(); i++) {
      Injection inj = plan.get(i);
      Outcome o = run(inj, expected);
      table.append("| ").append(i + 1).append(" | ").append(inj).append(" | ")
          .append(o.hung ? "HANG" : o.correct ? "bitwise equal" + (o.resubmitted ? " (resubmitted)" : "") : "WRONG")
          .append(" | ").append(o.slowestPeerMs).append(" | ").append(String.format("%.1f", o.seconds))
          .append(" | ").append(String.join("; ", o.problems)).append(" |\n");
      System.out.println("injection " + (i + 1) + ": " + inj + " -> " + (o.correct ? "correct" : "WRONG")
          + ", slowest peer " + o.slowestPeerMs + " ms, " + String.format("%.1f", o.seconds) + " s "
          + o.problems);
      if (!o.problems.isEmpty()) {
        failures.add((i + 1) + " " + inj + ": " + o.problems);
      }
      peerMs.computeIfAbsent(inj.kind, k -> new ArrayList<>()).add(o.slowestPeerMs);
      for (Map.Entry<String, long[]> e : probe().entrySet()) {
        resources.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(e.getValue());
      }
    }
    StringBuilder summary = new StringBuilder("\n| kind | injections | slowest surviving peer, median / max (ms) |\n"
        + "|---|---|---|\n");
    for (Map.Entry<Kind, List<Long>> e : peerMs.entrySet()) {
      List<Long> v = new ArrayList<>(e.getValue());
      Collections.sort(v);
      summary.append("| ").append(e.getKey()).append(" | ").append(v.size()).append(" | ")
          .append(v.get(v.size() / 2)).append(" / ").append(v.get(v.size() - 1)).append(" |\n");
    }
    StringBuilder leaks = new StringBuilder("\n| executor | probes | collective threads first/last | fds first/last"
        + " | direct MiB first/last |\n|---|---|---|---|---|\n");
    for (Map.Entry<String, List<long[]>> e : resources.entrySet()) {
      List<long[]> p = e.getValue();
      long[] first = p.get(Math.min(1, p.size() - 1));
      long[] last = p.get(p.size() - 1);
      leaks.append("| ").append(e.getKey()).append(" | ").append(p.size()).append(" | ").append(first[0])
          .append(" / ").append(last[0]).append(" | ").append(first[1]).append(" / ").append(last[1]).append(" | ")
          .append(first[2] >> 20).append(" / ").append(last[2] >> 20).append(" |\n");
      long mostThreads = p.stream().mapToLong(x -> x[0]).max().orElse(0);
      if (mostThreads > FIXED_THREADS || (p.size() >= 3 && (last[1] > first[1] + 8
          || last[2] > first[2] + (16 << 20)))) {
        failures.add("executor " + e.getKey() + " grew from " + Arrays.toString(first) + " to "
            + Arrays.toString(last) + " (threads, fds, direct bytes) over " + p.size() + " probes, at most "
            + mostThreads + " threads");
      }
    }
    String report = "Fault campaign: " + plan.size() + " injections, seed " + SEED + ", fault-free run "
        + String.format("%.1f", clean.seconds) + " s\n\n" + table + summary + leaks;
    Path out = Paths.get("target", "fault-campaign.md");
    Files.createDirectories(out.getParent());
    Files.writeString(out, report);
    System.out.println(report);
    assertTrue(clean.correct && clean.problems.isEmpty(), "the fault-free run: " + clean.problems);
    assertEquals(List.of(), failures, "injections that did not end well (see target/fault-campaign.md)");
  }
}
