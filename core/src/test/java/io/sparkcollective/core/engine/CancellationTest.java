package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.api.RemoteFailureException;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.serialization.KryoObjectSerializer;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.local.LocalFabric;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A rank whose caller is cancelled (its {@link Cancellation} fires, as Spark's kill flag does, or its thread
 * is interrupted) leaves whatever it waits in within 100 ms with {@link CollectiveCancelledException}, and
 * its peers' calls then fail with its reason instead of waiting for their deadline. Every wait of the API:
 * each collective, barrier, send/recv, object collectives, async futures and the TCP join.
 */
@Timeout(120)
class CancellationTest {
  /** What a rank's cancelled caller must never outlast (the operation's own deadline is a minute). */
  private static final long BOUND_MS = 100;
  private static final CollectiveConfig TCP_CALLER = CollectiveConfig.from(Map.of(
      CollectiveConfig.OPERATION_TIMEOUT_MS, "60000", CollectiveConfig.JOIN_TIMEOUT_MS, "60000"));
  private static final CollectiveConfig TCP_EVENT_LOOP = CollectiveConfig.from(Map.of(
      CollectiveConfig.OPERATION_TIMEOUT_MS, "60000", CollectiveConfig.JOIN_TIMEOUT_MS, "60000",
      CollectiveConfig.PROGRESS, "eventLoop"));

  /** One blocking call of the API, made by the rank that is cancelled while its peers never call it. */
  static List<Arguments> waits() {
    List<Arguments> all = new ArrayList<>();
    Map<String, Consumer<Communicator>> calls = new java.util.LinkedHashMap<>();
    calls.put("allReduce", c -> c.allReduce(new float[100_000], ReduceOp.SUM));
    calls.put("reduceScatter", c -> c.reduceScatter(DataBuffer.of(new double[999]), ReduceOp.MAX,
        CollectiveOptions.DEFAULT));
    calls.put("allGather", c -> c.allGather(DataBuffer.of(new int[10]), DataBuffer.of(new int[30]),
        CollectiveOptions.DEFAULT));
    calls.put("broadcast", c -> c.broadcast(DataBuffer.of(new long[5]), 1,
        CollectiveOptions.DEFAULT));
    calls.put("barrier", Communicator::barrier);
    calls.put("recv", c -> c.recv(DataBuffer.of(new float[8]), 1, CollectiveOptions.DEFAULT));
    calls.put("allGatherObjects", c -> c.allGatherObjects("rank-" + c.rank()));
    calls.put("broadcastObject", c -> c.broadcastObject(null, 1));
    calls.put("allReduceAsync", c -> {
      CompletableFuture<Void> f = c.allReduceAsync(DataBuffer.of(new float[1000]), ReduceOp.SUM,
          CollectiveOptions.DEFAULT);
      try {
        f.get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        throw (RuntimeException) e.getCause();
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
    for (String transport : new String[] {"in-JVM", "tcp-caller", "tcp-eventLoop"}) {
      for (Map.Entry<String, Consumer<Communicator>> e : calls.entrySet()) {
        for (boolean interrupt : new boolean[] {false, true}) {
          if (interrupt && e.getKey().endsWith("Async")) {
            continue; // the waiting thread is the caller's, in the future's get: the operation runs elsewhere
          }
          all.add(Arguments.of(transport, e.getKey(), e.getValue(), interrupt));
        }
      }
    }
    return all;
  }

  @ParameterizedTest(name = "{0} {1} interrupt={3}")
  @MethodSource("waits")
  void shouldLeaveTheWaitWithin100MsAndFailThePeersWithItsReason(String transport, String name,
      Consumer<Communicator> call, boolean interrupt) throws Exception {
    int n = 3;
    AtomicReference<String> killed = new AtomicReference<>();
    Cancellation[] cancellations = {Cancellation.NONE, Cancellation.NONE, killed::get};
    try (Group g = Group.of(transport, n, cancellations)) {
      Communicator victim = g.comms.get(2);
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      long[] leftAt = new long[1];
      Thread t = new Thread(() -> {
        try {
          call.accept(victim);
        } catch (Throwable e) {
          leftAt[0] = System.nanoTime();
          thrown.set(e);
        }
      }, "victim");
      t.start();
      Thread.sleep(300); // well inside the wait
      assertTrue(t.isAlive(), name + " returned although its peers never called it: " + thrown.get());
      long firedAt = System.nanoTime();
      if (interrupt) {
        t.interrupt();
      } else {
        killed.set("task 7 was killed: stage cancelled");
      }
      t.join(10_000);
      assertTrue(!t.isAlive(), name + " did not leave its wait");
      long tookMs = (leftAt[0] - firedAt) / 1_000_000;
      assertInstanceOf(CollectiveCancelledException.class, thrown.get(), name + ": " + thrown.get());
      String reason = interrupt ? "interrupted" : "task 7 was killed: stage cancelled";
      assertTrue(thrown.get().getMessage().contains(reason), thrown.get().getMessage());
      assertTrue(tookMs < BOUND_MS, name + " took " + tookMs + " ms to leave: " + thrown.get());
      // The group is aborted: a peer learns it at once, with the cancelled rank's reason.
      long before = System.nanoTime();
      CollectiveException peer = failureSeenBy(g.comms.get(0));
      long peerMs = (System.nanoTime() - before) / 1_000_000;
      assertInstanceOf(RemoteFailureException.class, peer, peer.toString());
      assertEquals(2, ((RemoteFailureException) peer).originRank(), peer.getMessage());
      assertTrue(peer.getMessage().contains(reason), peer.getMessage());
      assertTrue(peerMs < 2000, "the peer took " + peerMs + " ms");
    }
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  @Timeout(60)
  void shouldLeaveATcpJoinWithin100MsWhenCancelledWhileAPeerNeverJoins(boolean interrupt) throws Exception {
    try (TcpCluster cluster = new TcpCluster(2, TCP_CALLER)) {
      AtomicReference<String> killed = new AtomicReference<>();
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      long[] leftAt = new long[1];
      Thread t = new Thread(() -> {
        try {
          TcpGroup.join(cluster.endpoint(0), "never-complete", 0, cluster.addresses(), TCP_CALLER,
              new KryoObjectSerializer(), killed::get);
        } catch (Throwable e) {
          leftAt[0] = System.nanoTime();
          thrown.set(e);
        }
      }, "joiner");
      t.start();
      Thread.sleep(300);
      assertTrue(t.isAlive(), "the join returned without its peer: " + thrown.get());
      long firedAt = System.nanoTime();
      if (interrupt) {
        t.interrupt();
      } else {
        killed.set("task 3 was killed");
      }
      t.join(10_000);
      assertInstanceOf(CollectiveCancelledException.class, thrown.get(), String.valueOf(thrown.get()));
      long tookMs = (leftAt[0] - firedAt) / 1_000_000;
      assertTrue(tookMs < BOUND_MS, "the join took " + tookMs + " ms to leave");
      assertTrue(thrown.get().getMessage().contains(interrupt ? "interrupted" : "task 3 was killed"),
          thrown.get().getMessage());
    }
  }

  @org.junit.jupiter.api.Test
  @Timeout(60)
  void shouldTellTheRanksThatJoinedWhyACancelledJoinGaveUp() throws Exception {
    // Ranks 0 and 1 have joined each other; rank 2 has not come yet when rank 0's task fails. Rank 1 must
    // fail at once with rank 0's reason, not wait out its join timeout or learn only that rank 0 left.
    try (TcpCluster cluster = new TcpCluster(3, TCP_CALLER)) {
      AtomicReference<String> failed = new AtomicReference<>();
      AtomicReference<Throwable> thrown0 = new AtomicReference<>();
      AtomicReference<Throwable> thrown1 = new AtomicReference<>();
      Thread r0 = new Thread(() -> joinCatching(cluster, 0, failed::get, thrown0), "rank-0");
      Thread r1 = new Thread(() -> joinCatching(cluster, 1, Cancellation.NONE, thrown1), "rank-1");
      r0.start();
      r1.start();
      Thread.sleep(300);
      assertTrue(r0.isAlive() && r1.isAlive(), "a join returned without rank 2: " + thrown0 + " " + thrown1);
      long firedAt = System.nanoTime();
      failed.set("the task of rank 0 failed: java.lang.IllegalStateException: bad input row 17");
      r0.join(10_000);
      r1.join(10_000);
      long peerMs = (System.nanoTime() - firedAt) / 1_000_000;
      assertInstanceOf(CollectiveCancelledException.class, thrown0.get(), String.valueOf(thrown0.get()));
      assertInstanceOf(RemoteFailureException.class, thrown1.get(), String.valueOf(thrown1.get()));
      assertEquals(0, ((RemoteFailureException) thrown1.get()).originRank(), thrown1.get().getMessage());
      assertTrue(thrown1.get().getMessage().contains("bad input row 17"), thrown1.get().getMessage());
      assertTrue(peerMs < 2000, "rank 1 took " + peerMs + " ms to fail");
    }
  }

  private static void joinCatching(TcpCluster cluster, int rank, Cancellation cancellation,
      AtomicReference<Throwable> thrown) {
    try {
      TcpGroup.join(cluster.endpoint(rank), "half-formed", rank, cluster.addresses(), TCP_CALLER,
          new KryoObjectSerializer(), cancellation).close();
    } catch (Throwable e) {
      thrown.set(e);
    }
  }

  @org.junit.jupiter.api.Test
  @Timeout(60)
  void shouldKeepTheConnectionOtherGroupsUseWhenAnInterruptedRankAborts() throws Exception {
    // The connection between two endpoints carries every group between them: a rank interrupted while it
    // waits or sends must fail its own group only (Java closes a blocking channel that an interrupted thread
    // uses; the endpoint's sockets are non-blocking, which must stay so).
    try (TcpCluster cluster = new TcpCluster(2, TCP_CALLER)) {
      List<Communicator> bystanders = cluster.group("bystanders");
      List<Communicator> victims = cluster.group("victims");
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      Thread t = new Thread(() -> {
        try {
          victims.get(0).allReduce(new float[1 << 20], ReduceOp.SUM);
        } catch (Throwable e) {
          thrown.set(e);
        }
      }, "victim");
      t.start();
      Thread.sleep(300);
      t.interrupt();
      t.join(10_000);
      assertInstanceOf(CollectiveCancelledException.class, thrown.get(), String.valueOf(thrown.get()));
      CollectiveException peer = failureSeenBy(victims.get(1));
      assertInstanceOf(RemoteFailureException.class, peer, "the ABORT arrived, not a dropped connection: " + peer);
      long connections = cluster.endpoint(0).openConnections();
      // A thread interrupted while it sends (between two of its checks) still sends, without closing the link:
      // here a stray frame of a later operation, which the peer keeps queued and never matches.
      io.sparkcollective.core.transport.Transport link = ((EngineCommunicator) bystanders.get(0)).transport();
      io.sparkcollective.core.transport.Frame stray = link.acquire(16);
      stray.payload().size(16);
      stray.header(io.sparkcollective.core.api.CollectiveKind.ALL_REDUCE.wireCode(), 0, 99, 0, 0,
          io.sparkcollective.core.api.DType.F32.wireCode(), ReduceOp.SUM.wireCode(), -1, 0, 4, 0);
      Thread.currentThread().interrupt();
      try {
        link.send(1, stray);
      } finally {
        assertTrue(Thread.interrupted(), "the interrupt status is left as it was");
      }
      // The other group between the same endpoints goes on over the same connections.
      ExecutorService pool = Executors.newFixedThreadPool(2);
      try {
        List<Future<float[]>> sums = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
          int rank = r;
          sums.add(pool.submit(() -> {
            float[] v = new float[100_000];
            java.util.Arrays.fill(v, rank + 1);
            bystanders.get(rank).allReduce(v, ReduceOp.SUM);
            return v;
          }));
        }
        for (Future<float[]> f : sums) {
          float[] v = f.get(30, TimeUnit.SECONDS);
          assertEquals(3f, v[0]);
          assertEquals(3f, v[v.length - 1]);
        }
      } finally {
        pool.shutdownNow();
      }
      assertEquals(connections, cluster.endpoint(0).openConnections(), "no connection was dropped and redialled");
      for (Communicator c : victims) {
        c.close();
      }
      for (Communicator c : bystanders) {
        c.close();
      }
    }
  }

  /**
   * The failure {@code peer}'s group reports once it has one (its health check, polled for at most 2 s). A
   * call would do too, but might first find frames the cancelled rank sent before it stopped and report that
   * they differ from the call instead.
   */
  private static CollectiveException failureSeenBy(Communicator peer) throws InterruptedException {
    long until = System.nanoTime() + 2_000_000_000L;
    while (true) {
      try {
        peer.checkHealth();
      } catch (CollectiveException e) {
        return e;
      }
      if (System.nanoTime() > until) {
        throw new AssertionError("rank " + peer.rank() + " saw no failure of its group within 2 s");
      }
      Thread.sleep(1);
    }
  }

  /** A group of 3 ranks over one transport, each rank with its own cancellation. */
  private static final class Group implements AutoCloseable {
    final List<Communicator> comms = new ArrayList<>();
    private TcpCluster cluster;

    static Group of(String transport, int n, Cancellation[] cancellations) throws Exception {
      Group g = new Group();
      if (transport.equals("in-JVM")) {
        LocalFabric fabric = new LocalFabric(n, CollectiveConfig.defaults().segmentBytes(), NanoClock.SYSTEM);
        for (int r = 0; r < n; r++) {
          g.comms.add(new EngineCommunicator(fabric.endpoint(r), CollectiveConfig.defaults(),
              new KryoObjectSerializer(), cancellations[r]));
        }
        return g;
      }
      CollectiveConfig config = transport.equals("tcp-caller") ? TCP_CALLER : TCP_EVENT_LOOP;
      g.cluster = new TcpCluster(n, config);
      List<InetSocketAddress> peers = g.cluster.addresses();
      ExecutorService pool = Executors.newFixedThreadPool(n);
      try {
        List<Future<Communicator>> joins = new ArrayList<>();
        for (int r = 0; r < n; r++) {
          int rank = r;
          joins.add(pool.submit(() -> TcpGroup.join(g.cluster.endpoint(rank), "cancel-" + transport, rank, peers,
              config, new KryoObjectSerializer(), cancellations[rank])));
        }
        for (Future<Communicator> f : joins) {
          g.comms.add(f.get(30, TimeUnit.SECONDS));
        }
      } finally {
        pool.shutdownNow();
      }
      return g;
    }

    @Override
    public void close() {
      for (Communicator c : comms) {
        try {
          c.close();
        } catch (RuntimeException ignored) {
          // The group is failed on purpose; closing only releases it.
        }
      }
      if (cluster != null) {
        cluster.close();
      }
    }
  }
}
