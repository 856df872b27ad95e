package io.sparkcollective.core.testing;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.launch.PeerList;
import io.sparkcollective.core.transport.tcp.TcpEndpoint;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * One rank of a multi-process failure test: joins the group over TCP, prints {@code JOINED}, then acts by
 * {@code --mode}: {@code loop} runs all-reduces of 16 MiB until the group fails; {@code mismatch} runs one
 * all-reduce whose length depends on the rank ({@code --odd-rank} uses another); {@code idle} runs one
 * barrier, then checks the group's health until it fails; {@code exit-after-barrier} leaves after one
 * barrier. {@code --heartbeat-timeout-ms} sets how long a silent connection is kept (heartbeats every
 * 250 ms). A failure prints {@code FAILED <epoch ms> <type>: <message>} and exits 3; success prints
 * {@code DONE}.
 */
public final class FailureWorker {
  private FailureWorker() {}

  public static void main(String[] args) throws Exception {
    int rank = -1;
    String peers = null;
    String secret = io.sparkcollective.core.launch.LocalLauncher.secret();
    String mode = "loop";
    int oddRank = -1;
    String heartbeatTimeoutMs = CollectiveConfig.defaults().heartbeatTimeoutMs() + "";
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--rank":
          rank = Integer.parseInt(args[i + 1]);
          break;
        case "--peers":
          peers = args[i + 1];
          break;
        case "--mode":
          mode = args[i + 1];
          break;
        case "--odd-rank":
          oddRank = Integer.parseInt(args[i + 1]);
          break;
        case "--heartbeat-timeout-ms":
          heartbeatTimeoutMs = args[i + 1];
          break;
        default:
          break;
      }
    }
    if (mode.equals("absent")) {
      // Never starts its endpoint: the others must fail at the join timeout, naming this rank.
      Thread.sleep(30_000);
      return;
    }
    List<InetSocketAddress> list = PeerList.parse(peers);
    InetSocketAddress me = list.get(rank);
    CollectiveConfig config = CollectiveConfig.from(java.util.Map.of(CollectiveConfig.JOIN_TIMEOUT_MS, "5000",
        CollectiveConfig.HEARTBEAT_INTERVAL_MS, "250", CollectiveConfig.HEARTBEAT_TIMEOUT_MS, heartbeatTimeoutMs));
    CollectiveOptions options = CollectiveOptions.DEFAULT.withTimeout(Duration.ofSeconds(60));
    long end = System.currentTimeMillis() + 120_000;
    try (TcpEndpoint endpoint = TcpEndpoint.start(me.getHostString(), me.getPort(), secret, config);
        Communicator comm = TcpGroup.join(endpoint, "kill-test", rank, list, config)) {
      System.out.println("JOINED");
      System.out.flush();
      switch (mode) {
        case "mismatch":
          comm.allReduce(DataBuffer.of(new float[rank == oddRank ? 1001 : 1000]), ReduceOp.SUM, options);
          break;
        case "idle":
          comm.barrier();
          while (System.currentTimeMillis() < end) {
            comm.checkHealth();
            Thread.sleep(5);
          }
          break;
        case "exit-after-barrier":
          comm.barrier();
          Runtime.getRuntime().halt(0);
          break;
        default:
          float[] data = new float[4 << 20];
          while (System.currentTimeMillis() < end) {
            comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, options);
          }
      }
      System.out.println("DONE");
    } catch (CollectiveException e) {
      System.out.println("FAILED " + System.currentTimeMillis() + " " + e.getClass().getSimpleName() + ": "
          + e.getMessage());
      System.out.flush();
      // Give the ABORT this rank sent (asynchronously) time to leave before the process goes: otherwise a
      // peer may first see this rank's connection drop and report it instead of the rank that died.
      Thread.sleep(500);
      Runtime.getRuntime().halt(3);
    }
  }
}
