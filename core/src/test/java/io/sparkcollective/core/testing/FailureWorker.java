package io.sparkcollective.core.testing;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.engine.TcpGroup;
import io.sparkcollective.core.launch.PeerList;
import io.sparkcollective.core.transport.netty.NettyEndpoint;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * One rank of a multi-process failure test: joins the group over TCP, prints {@code JOINED}, then runs
 * all-reduces of 16 MiB until the group fails, printing {@code FAILED <epoch ms> <type>: <message>}
 * (exit 3), or {@code DONE} after 120 s (exit 0).
 */
public final class FailureWorker {
  private FailureWorker() {}

  public static void main(String[] args) throws Exception {
    int rank = -1;
    String peers = null;
    String secret = null;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--rank":
          rank = Integer.parseInt(args[i + 1]);
          break;
        case "--peers":
          peers = args[i + 1];
          break;
        case "--secret":
          secret = args[i + 1];
          break;
        default:
          break;
      }
    }
    List<InetSocketAddress> list = PeerList.parse(peers);
    InetSocketAddress me = list.get(rank);
    CollectiveConfig config = CollectiveConfig.defaults();
    try (NettyEndpoint endpoint = NettyEndpoint.start(me.getHostString(), me.getPort(), secret, config);
        Communicator comm = TcpGroup.join(endpoint, "kill-test", rank, list, config)) {
      System.out.println("JOINED");
      System.out.flush();
      float[] data = new float[4 << 20];
      long end = System.currentTimeMillis() + 120_000;
      CollectiveOptions options = CollectiveOptions.DEFAULT.withTimeout(Duration.ofSeconds(60));
      try {
        while (System.currentTimeMillis() < end) {
          comm.allReduce(DataBuffer.of(data), ReduceOp.SUM, options);
        }
      } catch (CollectiveException e) {
        System.out.println("FAILED " + System.currentTimeMillis() + " " + e.getClass().getSimpleName() + ": "
            + e.getMessage());
        System.out.flush();
        Runtime.getRuntime().halt(3);
      }
      System.out.println("DONE");
    }
  }
}
