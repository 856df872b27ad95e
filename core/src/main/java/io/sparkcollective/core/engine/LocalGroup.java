package io.sparkcollective.core.engine;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ObjectSerializer;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.serialization.KryoObjectSerializer;
import io.sparkcollective.core.time.NanoClock;
import io.sparkcollective.core.transport.Transport;
import io.sparkcollective.core.transport.local.LocalFabric;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * A group whose ranks are threads of this JVM, over the in-JVM transport: the fastest way to get
 * communicators, used for ranks sharing an executor and by tests. Each communicator must be driven by its
 * own thread (collectives block until all ranks take part).
 */
public final class LocalGroup {
  private final LocalFabric fabric;
  private final List<Communicator> communicators;

  private LocalGroup(LocalFabric fabric, List<Communicator> communicators) {
    this.fabric = fabric;
    this.communicators = communicators;
  }

  /** {@code size} ranks with the default configuration. */
  public static LocalGroup create(int size) {
    return create(size, CollectiveConfig.defaults(), UnaryOperator.identity());
  }

  /** {@code size} ranks; {@code wrap} may decorate each rank's transport (e.g. with fault injection). */
  public static LocalGroup create(int size, CollectiveConfig config, UnaryOperator<Transport> wrap) {
    return create(size, config, wrap, new KryoObjectSerializer());
  }

  /** As above, with the serializer used by the object collectives. */
  public static LocalGroup create(
      int size, CollectiveConfig config, UnaryOperator<Transport> wrap, ObjectSerializer serializer) {
    LocalFabric fabric = new LocalFabric(size, config.segmentBytes(), NanoClock.SYSTEM);
    List<Communicator> list = new ArrayList<>(size);
    for (int r = 0; r < size; r++) {
      list.add(new EngineCommunicator(wrap.apply(fabric.endpoint(r)), config, serializer));
    }
    return new LocalGroup(fabric, Collections.unmodifiableList(list));
  }

  public int size() {
    return communicators.size();
  }

  public Communicator communicator(int rank) {
    return communicators.get(rank);
  }

  public List<Communicator> communicators() {
    return communicators;
  }

  /** The fabric (tests inspect its frame pool for leaks). */
  public LocalFabric fabric() {
    return fabric;
  }
}
