package io.sparkcollective.spark;

import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.api.RemoteFailureException;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.ManagedCommunicator;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.kernel.Bf16Pairs;
import io.sparkcollective.core.kernel.HalfFloats;
import io.sparkcollective.core.launch.PeerList;
import io.sparkcollective.core.transport.tcp.TcpEndpoint;
import java.io.Closeable;
import java.io.File;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Executor side: one {@link TcpEndpoint} per executor JVM, registered with the driver plugin at start.
 * A barrier task's group (application, stage, attempt; rank = partition id) is formed when the task first
 * asks for its communicator, so a stage that never uses the API costs nothing. A task that fails or is
 * killed aborts its group, so its peers fail at once; one that succeeds leaves it.
 *
 * <p>Python tasks reach the same membership through the executor's {@link PythonChannel}: the worker names
 * its task attempt, and the session calls the task's communicator on the worker's behalf.
 *
 * <p>Spark swallows exceptions from {@code init} and {@code onTaskStart}; a failure there is kept and
 * thrown to the task by {@link Collective#communicator()}, with its cause.
 */
public final class CollectiveExecutorPlugin implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(CollectiveExecutorPlugin.class);
  private static volatile CollectiveExecutorPlugin instance;
  /** Longest pause between two JOIN asks of a rank whose group is not complete yet. */
  private static final long JOIN_POLL_MAX_MICROS = 5000;
  /** How long a killed task waits for the driver to say why its attempt failed (round trips take 1-17 ms). */
  private static final long WHY_WAIT_MS = 50;
  /** How often a call waiting for the background formation looks at its task's kill flag. */
  private static final long FORMING_POLL_MS = 10;
  /**
   * How long after a barrier task's start its background formation begins, unless the task asks first: tasks
   * that end sooner without calling (empty or trivial stages) cost nothing, while a task that loads a
   * partition before its first call still finds the group formed.
   */
  private static final long FORM_DELAY_MS = 100;

  static final String MDC_GROUP = "collective.group";
  static final String MDC_RANK = "collective.rank";
  private final ThreadLocal<TaskGroup> current = new ThreadLocal<>();
  /** The running barrier tasks by task attempt id, for Python workers. */
  private final Map<Long, TaskGroup> running = new ConcurrentHashMap<>();
  private volatile PythonChannel python;
  private volatile boolean pythonTried;
  private PluginContext ctx;
  private CollectiveConfig config;
  private volatile TcpEndpoint endpoint;
  private String secret;
  private CollectiveMetrics metrics;
  private volatile String appId;
  private volatile Throwable startFailure;
  private volatile java.util.concurrent.ExecutorService driverAsks;
  /** Threads that form barrier tasks' groups in the background (group.formAtTaskStart). */
  private final java.util.concurrent.ExecutorService formers = java.util.concurrent.Executors.newCachedThreadPool(
      r -> {
        Thread t = new Thread(r, "collective-form");
        t.setDaemon(true);
        return t;
      });

  /**
   * The application id, read at the first barrier task: in local mode the executor and its plugins start
   * before the driver has set spark.app.id.
   */
  private String appId() {
    if (appId == null) {
      appId = ctx.conf().getOption("spark.app.id").getOrElse(() -> SparkEnv.get().conf().get("spark.app.id",
          "app"));
    }
    return appId;
  }

  /** This executor's endpoint (null if it did not start). */
  TcpEndpoint endpoint() {
    return endpoint;
  }

  CollectiveConfig config() {
    return config;
  }

  static CollectiveExecutorPlugin instance() {
    return instance;
  }

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    this.ctx = ctx;
    try {
      this.metrics = new CollectiveMetrics(ctx.metricRegistry());
      this.config = SparkSettings.config(ctx.conf());
      this.secret = SparkSettings.sparkAuthenticates(ctx.conf())
          ? SparkSettings.derivedSecret(SparkEnv.get().securityManager().getSecretKey(), ctx.conf().getAppId())
          : extraConf.get(CollectiveDriverPlugin.SECRET_KEY);
      this.driverAsks = driverAsker();
      LOG.info("executor {}: half-precision conversions run {}{}; the bfloat16 wire converts {}", ctx.executorID(),
          HalfFloats.VECTORS ? "on the Vector API" : "as scalar loops (3-6x slower; start executors with "
          + "--add-modules=jdk.incubator.vector in spark.executor.extraJavaOptions for the Vector API)",
          HalfFloats.NATIVE_F16 ? "; float16 by the JVM's own conversions" : "",
          Bf16Pairs.LANES ? "on SIMD registers by itself (pairs of values per word)"
              : HalfFloats.VECTORS ? "its sums on the Vector API, the rest element by element" : "element by element");
      if (SparkEnv.get().blockManager().blockManagerId() != null) {
        startEndpoint();
        startPython();
      }
      // else local mode: the executor starts before its block manager; the first barrier task starts it.
    } catch (Throwable t) {
      // Never throw from init: Spark would relaunch the executor forever. Tasks get the error instead.
      startFailure = t;
      LOG.error("spark-collective could not start on executor {}", ctx.executorID(), t);
    }
    instance = this;
  }

  /** Starts this executor's endpoint on the executor's host and registers it with the driver plugin. */
  private synchronized void startEndpoint() {
    if (endpoint != null) {
      return;
    }
    // PluginContext.hostname() is null on executors; the block manager knows the executor's host.
    String host = SparkEnv.get().blockManager().blockManagerId().host();
    TcpEndpoint e = TcpEndpoint.start(host, secret, config);
    try {
      ctx.ask(new Messages.RegisterEndpoint(ctx.executorID(), e.addressKey()).encode());
    } catch (Exception ex) {
      e.close();
      throw new CollectiveException("executor " + ctx.executorID() + " cannot register its endpoint with the "
          + "driver plugin: " + ex, ex);
    }
    endpoint = e;
    metrics.watch(e);
  }

  /**
   * Opens the door for this executor's Python workers (once; a failure is logged and Python tasks are told
   * the channel is missing). Array segments live where shared-memory rings do.
   */
  private void startPython() {
    if (pythonTried) {
      return;
    }
    synchronized (this) {
      if (pythonTried) {
        return;
      }
      pythonTried = true;
      try {
        File[] dirs = SparkEnv.get().blockManager().diskBlockManager().localDirs();
        python = PythonChannel.open(dirs, config.sharedMemoryDir(), this::pythonTask);
      } catch (Exception | LinkageError e) {
        LOG.warn("executor {}: Python tasks cannot use spark-collective here: {}", ctx.executorID(), e.toString());
      }
    }
  }

  /** The running barrier task a Python worker names, checked against what the worker sees. */
  private PythonChannel.Task pythonTask(long taskAttemptId, int stageId, int stageAttempt, int partitionId) {
    TaskGroup g = running.get(taskAttemptId);
    if (g == null) {
      throw new CollectiveUsageException("task " + taskAttemptId + " is not a running barrier task on executor "
          + ctx.executorID() + ": call spark_collective.communicator() inside rdd.barrier().mapPartitions(...)");
    }
    // A stage attempt of -1: the worker's Spark line does not tell it (the task attempt id is unique anyway).
    if (g.stageId != stageId || (stageAttempt >= 0 && g.stageAttempt != stageAttempt) || g.rank != partitionId) {
      throw new CollectiveUsageException("task " + taskAttemptId + " runs partition " + g.rank + " of stage "
          + g.stageId + " attempt " + g.stageAttempt + ", not partition " + partitionId + " of stage " + stageId
          + " attempt " + stageAttempt);
    }
    ensureStarted();
    return g;
  }

  /** Whether the calling barrier task's group has formed in the background, before any call asked (tests). */
  boolean formedAhead() {
    TaskGroup g = current.get();
    java.util.concurrent.CompletableFuture<ManagedCommunicator> f = g == null ? null : g.forming;
    return f != null && f.isDone() && !f.isCompletedExceptionally() && g.comm == null;
  }

  /** The Python workers' door (null if it did not open); tests. */
  PythonChannel python() {
    return python;
  }

  @Override
  public void onTaskStart() {
    TaskContext tc = TaskContext.get();
    if (tc instanceof BarrierTaskContext) {
      BarrierTaskContext b = (BarrierTaskContext) tc;
      String group = appId() + "/stage-" + b.stageId() + "/attempt-" + b.stageAttemptNumber();
      TaskGroup g = new TaskGroup(b, group);
      current.set(g);
      running.put(b.taskAttemptId(), g);
      if (!pythonTried && SparkEnv.get().blockManager().blockManagerId() != null) {
        startPython();
      }
      if (config != null && config.formAtTaskStart()) {
        g.formInBackground();
      }
      // For log patterns: %X{collective.group} and %X{collective.rank} (see conf/log4j2.properties).
      MDC.put(MDC_GROUP, group);
      MDC.put(MDC_RANK, Integer.toString(b.partitionId()));
    }
  }

  @Override
  public void onTaskSucceeded() {
    TaskGroup g = endTask();
    if (g != null) {
      g.close();
    }
  }

  @Override
  public void onTaskFailed(TaskFailedReason reason) {
    TaskGroup g = endTask();
    if (g != null) {
      g.abort("the task of rank " + g.rank + " failed: " + StageAttemptListener.firstLine(reason.toErrorString()));
    }
  }

  /** The ending task's membership, no longer the thread's. */
  private TaskGroup endTask() {
    TaskGroup g = current.get();
    current.remove();
    if (g != null) {
      running.remove(g.taskAttemptId);
      MDC.remove(MDC_GROUP);
      MDC.remove(MDC_RANK);
    }
    return g;
  }

  /**
   * Runs asks to the driver that a caller must not wait for longer than it chooses (PluginContext.ask has no
   * deadline of its own); one thread per executor, made at start.
   */
  private static java.util.concurrent.ExecutorService driverAsker() {
    java.util.concurrent.ThreadPoolExecutor e = new java.util.concurrent.ThreadPoolExecutor(1, 1, 0,
        TimeUnit.MILLISECONDS, new java.util.concurrent.LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, "collective-driver-ask");
          t.setDaemon(true);
          return t;
        });
    e.prestartAllCoreThreads();
    return e;
  }

  @Override
  public void shutdown() {
    instance = null;
    if (driverAsks != null) {
      driverAsks.shutdownNow();
    }
    formers.shutdownNow();
    if (python != null) {
      python.close();
    }
    if (endpoint != null) {
      endpoint.close();
    }
  }

  private void ensureStarted() {
    if (startFailure != null) {
      throw new CollectiveException("spark-collective did not start on executor " + ctx.executorID() + ": "
          + startFailure, startFailure);
    }
    if (endpoint == null) {
      startEndpoint();
    }
  }

  /** The calling barrier task's communicator, formed on first use. */
  Communicator communicator(TaskContext tc) {
    ensureStarted();
    TaskGroup g = current.get();
    if (g == null) {
      throw new CollectiveUsageException("task " + tc.taskAttemptId() + " of stage " + tc.stageId()
          + " is not a barrier task: run the stage with rdd.barrier().mapPartitions(...) "
          + "(or Barrier.mapPartitions for a JavaRDD)");
    }
    return g.communicator();
  }

  /**
   * One barrier task's membership: its group name and rank, the communicator once formed, and the task's
   * kill flag as the {@link Cancellation} of every wait of it (Spark kills the other tasks of a barrier stage
   * attempt when one fails, without interrupting their threads, and on stage or job cancellation).
   */
  private final class TaskGroup implements PythonChannel.Task {
    final String name;
    final int rank;
    final int size;
    final int stageId;
    final int stageAttempt;
    final long taskAttemptId;
    final Cancellation killed;
    /** The waits of the formation: the task's kill, or its end (a formation in the background outlives neither). */
    private final Cancellation formation;
    private final BarrierTaskContext task;
    /** The formation begun at task start, if any. */
    private volatile java.util.concurrent.CompletableFuture<ManagedCommunicator> forming;
    /** Opened by the first call: the background formation then starts without waiting out its delay. */
    private final java.util.concurrent.CountDownLatch asked = new java.util.concurrent.CountDownLatch(1);
    private volatile String killReason;
    volatile ManagedCommunicator comm;
    private volatile boolean ended;
    /** Why the task failed, set before {@link #ended}: a formation still joining gives it to the ranks that joined. */
    private volatile String failedWhy;
    /** Python workers' sessions of this task, closed when it ends. */
    private final List<Closeable> sessions = new ArrayList<>();
    /** What this rank did in the group, reported to the driver when the task ends. */
    private StageStats stats;

    @Override
    public long answerWithinMs() {
      return config.joinTimeoutMs() + config.operationTimeoutMs() + PythonSession.ANSWER_MARGIN_MS;
    }

    TaskGroup(BarrierTaskContext task, String name) {
      this.name = name;
      this.rank = task.partitionId();
      this.size = task.getTaskInfos().length;
      this.stageId = task.stageId();
      this.stageAttempt = task.stageAttemptNumber();
      this.taskAttemptId = task.taskAttemptId();
      this.task = task;
      this.killed = () -> task.isInterrupted() ? killReason() : null;
      this.formation = () -> ended ? (failedWhy != null ? failedWhy : "the task of rank " + rank + " ended")
          : killed.reason();
    }

    /**
     * Begins forming the group on a thread of its own ({@link #FORM_DELAY_MS} after the task's start, or at its
     * first call if that comes sooner), so the task's first call finds it ready. Whatever
     * happens there waits for that call (nothing is logged above debug: a task that never calls is no error);
     * if the task ends first, the formation stops and a group it formed is closed.
     */
    void formInBackground() {
      forming = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
        try {
          asked.await(FORM_DELAY_MS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new CollectiveCancelledException("rank " + rank + " of " + name + ": the executor is stopping");
        }
        String stop = formation.reason();
        if (stop != null) {
          throw new CollectiveCancelledException("rank " + rank + " of " + name + " left the join: " + stop);
        }
        ensureStarted();
        return form();
      }, formers);
      forming.whenComplete((c, e) -> {
        if (e != null) {
          LOG.debug("{} rank {}: the group formed at task start failed: {}", name, rank, e.toString());
        }
      });
    }

    /** The background formation's group, waited for in slices that see the task's kill. */
    private ManagedCommunicator awaitForming() {
      while (true) {
        String cancelled = Cancellation.check(killed);
        if (cancelled != null) {
          throw new CollectiveCancelledException("rank " + rank + " of " + name + " left the join: " + cancelled);
        }
        try {
          return forming.get(FORMING_POLL_MS, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
          // look at the kill flag again
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new CollectiveCancelledException("rank " + rank + " of " + name + " left the join: interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
          Throwable cause = e.getCause() instanceof java.util.concurrent.CompletionException
              && e.getCause().getCause() != null ? e.getCause().getCause() : e.getCause();
          if (cause instanceof CollectiveException) {
            throw (CollectiveException) cause;
          }
          throw new CollectiveException("rank " + rank + " of " + name + ": the group could not form: " + cause,
              cause);
        }
      }
    }

    /**
     * Why Spark killed this task: its own reason (which names the task whose failure made Spark kill the
     * others) and the attempt's first failure as the driver plugin knows it (task, executor, error), if it
     * answers within {@link #WHY_WAIT_MS}. Worked out once, when the kill is first seen.
     */
    private String killReason() {
      String r = killReason;
      if (r == null) {
        r = "task " + task.taskAttemptId() + " (rank " + rank + " of " + name + ") was killed by Spark: "
            + StageAttemptListener.firstLine(task.getKillReason().isDefined() ? task.getKillReason().get() : null)
            + firstFailure();
        killReason = r;
      }
      return r;
    }

    private String firstFailure() {
      try {
        Object answer = driverAsks.submit(() -> ctx.ask(new Messages.Why(stageId, stageAttempt).encode()))
            .get(WHY_WAIT_MS, TimeUnit.MILLISECONDS);
        Messages.JoinReply why = Messages.JoinReply.decode(answer);
        return why.attemptFailed ? "; the attempt's first failure: " + why.error : "";
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return "";
      } catch (Exception e) {
        return ""; // the driver is slow or gone: Spark's own reason has to do
      }
    }

    @Override
    public synchronized Communicator communicator() {
      if (comm == null) {
        if (forming != null) {
          asked.countDown();
          ManagedCommunicator c = awaitForming();
          if (ended) {
            throw new CollectiveCancelledException("rank " + rank + " of " + name + ": the task ended");
          }
          comm = c;
          return comm;
        }
        ManagedCommunicator c = form();
        if (ended) {
          // The task ended while a Python worker's call formed the group: nobody would close it.
          c.abort("the task of rank " + rank + " ended");
          c.close();
          throw new CollectiveCancelledException("rank " + rank + " of " + name + ": the task ended");
        }
        comm = c;
      }
      return comm;
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
    public String group() {
      return name;
    }

    @Override
    public synchronized void attach(Closeable session) {
      sessions.add(session);
    }

    private void closeSessions() {
      List<Closeable> s;
      synchronized (this) {
        s = new ArrayList<>(sessions);
        sessions.clear();
      }
      for (Closeable c : s) {
        PythonChannel.closeQuietly(c);
      }
    }

    private ManagedCommunicator form() {
      long start = System.nanoTime();
      long deadline = start + TimeUnit.MILLISECONDS.toNanos(config.joinTimeoutMs());
      long pauseMicros = 200;
      Messages.Join join = new Messages.Join(name, rank, size, ctx.executorID(), stageId, stageAttempt);
      while (true) {
        String cancelled = Cancellation.check(formation);
        if (cancelled != null) {
          throw new CollectiveCancelledException("rank " + rank + " of " + name + " left the join: " + cancelled);
        }
        Messages.JoinReply reply;
        try {
          reply = Messages.JoinReply.decode(ctx.ask(join.encode()));
        } catch (Exception e) {
          throw new CollectiveException("rank " + rank + " of " + name + " cannot reach the driver plugin: " + e, e);
        }
        if (reply.attemptFailed) {
          if (reply.failedRank >= 0 && reply.failedRank != rank) {
            throw reply.executorLost ? new PeerLostException(reply.failedRank, "rank " + rank + " of " + name + ": "
                + reply.error) : new RemoteFailureException(reply.failedRank, reply.error);
          }
          throw new CollectiveException("rank " + rank + " of " + name + ": " + reply.error);
        }
        if (reply.error != null) {
          throw new CollectiveException("rank " + rank + " of " + name + ": " + reply.error);
        }
        if (reply.peers != null) {
          List<InetSocketAddress> peers = PeerList.parse(String.join(",", reply.peers));
          ManagedCommunicator c = TcpGroup.join(endpoint, name, rank, peers, config,
              new SparkObjectSerializer(SparkEnv.get()), formation);
          long formed = System.nanoTime() - start;
          stats = new StageStats(metrics);
          stats.formed(formed);
          c.observe(stats);
          metrics.groupFormed(formed);
          LOG.info("{} rank {} of {}: group formed in {} ms", name, rank, size,
              TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
          return c;
        }
        if (System.nanoTime() > deadline) {
          throw new CollectiveTimeoutException(-1, "rank " + rank + " of " + name + ": not every rank asked to join "
              + "within " + config.joinTimeoutMs() + " ms");
        }
        LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(pauseMicros));
        pauseMicros = Math.min(pauseMicros * 2, JOIN_POLL_MAX_MICROS);
      }
    }

    void close() {
      ended = true;
      ManagedCommunicator c = comm;
      if (c != null) {
        c.close();
        report();
      } else {
        dropForming(null);
      }
      closeSessions();
    }

    void abort(String why) {
      failedWhy = why;
      ended = true;
      ManagedCommunicator c = comm;
      if (c != null) {
        LOG.warn("{} rank {}: {}; aborting the group", name, rank, why);
        c.abort(why);
        c.close();
        report();
      } else {
        dropForming(why);
      }
      closeSessions();
    }

    /**
     * The task ended with no call having taken the background formation's group: the formation stops (it
     * sees {@link #ended}) and a group it formed anyway is aborted ({@code why}, if the task failed) and closed.
     */
    private void dropForming(String why) {
      java.util.concurrent.CompletableFuture<ManagedCommunicator> f = forming;
      if (f == null) {
        return;
      }
      // A formation still in its delay wakes now and sees the end, instead of holding its thread for the rest of
      // the delay (stages of tasks that never call would otherwise keep several formers busy at once).
      asked.countDown();
      // Closed even if a call raced the end and took it: the task is over either way (closing twice is harmless).
      f.thenAccept(c -> {
        if (why != null) {
          c.abort(why);
        }
        c.close();
      });
    }

    /** Sends this rank's record to the driver's per-stage summary, without waiting. */
    private void report() {
      if (stats == null) {
        return;
      }
      try {
        String host = endpoint.addressKey().substring(0, endpoint.addressKey().lastIndexOf(':'));
        ctx.send(stats.report(name, stageId, stageAttempt, rank, size, host, comm.receipts()).encode());
      } catch (java.io.IOException | RuntimeException e) {
        LOG.debug("{} rank {}: no report to the driver: {}", name, rank, e.toString());
      }
    }
  }
}
