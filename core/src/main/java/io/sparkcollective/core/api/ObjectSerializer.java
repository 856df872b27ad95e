package io.sparkcollective.core.api;

/**
 * Turns objects into bytes for {@link Communicator#allGatherObjects} and
 * {@link Communicator#broadcastObject}. Implementations must be thread-safe. The core default is
 * Kryo-based; the Spark layer plugs in Spark's configured serializer.
 */
public interface ObjectSerializer {
  byte[] serialize(Object value);

  Object deserialize(byte[] bytes, int offset, int length);
}
