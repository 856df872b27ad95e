package io.sparkcollective.core.engine;

import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ObjectSerializer;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.serialization.KryoObjectSerializer;
import io.sparkcollective.core.transport.tcp.TcpEndpoint;
import io.sparkcollective.core.transport.tcp.TcpTransport;
import java.net.InetSocketAddress;
import java.util.List;

/**
 * Forms a group over TCP from a static peer list: every rank calls {@link #join} with the same group name
 * and the same list of endpoint addresses (rank r at index r). Returns once all ranks have joined.
 */
public final class TcpGroup {
  private TcpGroup() {}

  public static Communicator join(TcpEndpoint endpoint, String groupName, int rank, List<InetSocketAddress> peers,
      CollectiveConfig config) {
    return join(endpoint, groupName, rank, peers, config, new KryoObjectSerializer());
  }

  public static Communicator join(TcpEndpoint endpoint, String groupName, int rank, List<InetSocketAddress> peers,
      CollectiveConfig config, ObjectSerializer serializer) {
    return join(endpoint, groupName, rank, peers, config, serializer, Cancellation.NONE);
  }

  /**
   * As above; the join and every later wait of the communicator also stop when {@code cancellation} fires
   * (see {@link Cancellation}).
   */
  public static ManagedCommunicator join(TcpEndpoint endpoint, String groupName, int rank,
      List<InetSocketAddress> peers, CollectiveConfig config, ObjectSerializer serializer,
      Cancellation cancellation) {
    TcpTransport transport = endpoint.join(groupName, rank, peers, cancellation);
    return new EngineCommunicator(transport, config, serializer, cancellation);
  }
}
