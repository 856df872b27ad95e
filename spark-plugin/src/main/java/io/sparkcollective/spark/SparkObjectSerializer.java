package io.sparkcollective.spark;

import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.ObjectSerializer;
import java.nio.ByteBuffer;
import org.apache.spark.SparkEnv;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerInstance;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Object collectives through the application's own serializer ({@code spark.serializer}: Kryo with the
 * user's registrator when configured so), as Spark itself would ship the objects.
 */
final class SparkObjectSerializer implements ObjectSerializer {
  private static final ClassTag<Object> ANY = ClassTag$.MODULE$.Any();
  private final Serializer serializer;

  SparkObjectSerializer(SparkEnv env) {
    this.serializer = env.serializer();
  }

  @Override
  public byte[] serialize(Object value) {
    SerializerInstance s = serializer.newInstance();
    try {
      ByteBuffer b = s.serialize(value, ANY);
      byte[] out = new byte[b.remaining()];
      b.get(out);
      return out;
    } catch (RuntimeException e) {
      throw new CollectiveUsageException("cannot serialise " + (value == null ? "null" : value.getClass().getName())
          + " with " + serializer.getClass().getSimpleName() + ": " + e);
    }
  }

  @Override
  public Object deserialize(byte[] bytes, int offset, int length) {
    return serializer.newInstance().deserialize(ByteBuffer.wrap(bytes, offset, length), ANY);
  }
}
