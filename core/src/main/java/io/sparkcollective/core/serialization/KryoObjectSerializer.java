package io.sparkcollective.core.serialization;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.pool.KryoPool;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.ObjectSerializer;
import java.util.function.Consumer;
import org.objenesis.strategy.StdInstantiatorStrategy;

/**
 * The default {@link ObjectSerializer}: Kryo with class names written (no registration needed) and
 * objects without a no-argument constructor supported. Kryo instances are not thread-safe, so they come
 * from a pool.
 */
public final class KryoObjectSerializer implements ObjectSerializer {
  private final KryoPool pool;

  public KryoObjectSerializer() {
    this(k -> { });
  }

  /** With {@code customizer} applied to every Kryo instance (registrations, custom serializers). */
  public KryoObjectSerializer(Consumer<Kryo> customizer) {
    this.pool = new KryoPool.Builder(() -> {
      Kryo kryo = new Kryo();
      kryo.setRegistrationRequired(false);
      kryo.setInstantiatorStrategy(new Kryo.DefaultInstantiatorStrategy(new StdInstantiatorStrategy()));
      customizer.accept(kryo);
      return kryo;
    }).softReferences().build();
  }

  @Override
  public byte[] serialize(Object value) {
    Kryo kryo = pool.borrow();
    try (Output out = new Output(256, -1)) {
      kryo.writeClassAndObject(out, value);
      return out.toBytes();
    } catch (RuntimeException e) {
      throw new CollectiveUsageException("cannot serialise " + describe(value) + " with Kryo: " + e);
    } finally {
      pool.release(kryo);
    }
  }

  @Override
  public Object deserialize(byte[] bytes, int offset, int length) {
    Kryo kryo = pool.borrow();
    try (Input in = new Input(bytes, offset, length)) {
      return kryo.readClassAndObject(in);
    } finally {
      pool.release(kryo);
    }
  }

  private static String describe(Object value) {
    return value == null ? "null" : "an object of " + value.getClass().getName();
  }
}
