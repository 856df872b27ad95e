package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.esotericsoftware.kryo.Kryo;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.Communicator;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.serializer.KryoRegistrator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Object gathers use the application's Kryo configuration: with registration required, the class the user's
 * registrator registers travels, an unregistered one is refused with an error naming it.
 */
@Timeout(120)
class KryoRegistratorTest {
  private static JavaSparkContext sc;

  /** Registered by {@link Registrator}. */
  public static final class Weights {
    public int rank;
    public float[] values;
  }

  /** Not registered. */
  public static final class Stranger {
    public int rank;
  }

  public static final class Registrator implements KryoRegistrator {
    @Override
    public void registerClasses(Kryo kryo) {
      kryo.register(Weights.class);
      kryo.register(float[].class);
    }
  }

  @BeforeAll
  static void start() {
    sc = new JavaSparkContext(new SparkConf().setMaster("local[2]").setAppName("kryo-registrator")
        .set("spark.plugins", CollectivePlugin.class.getName())
        .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .set("spark.kryo.registrationRequired", "true")
        .set("spark.kryo.registrator", Registrator.class.getName())
        .set("spark.ui.enabled", "false"));
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  @Test
  void gathersRegisteredClassesAndNamesAnUnregisteredOne() {
    List<String> seen = Barrier.mapPartitionsWithoutRetry(sc.parallelize(List.of(0, 1), 2), it -> {
      Communicator comm = Collective.communicator();
      Weights w = new Weights();
      w.rank = comm.rank();
      w.values = new float[] {comm.rank() + 0.5f};
      List<Weights> all = comm.allGatherObjects(w);
      String refused;
      try {
        Stranger s = new Stranger();
        s.rank = comm.rank();
        comm.allGatherObjects(s);
        refused = "no error";
      } catch (CollectiveUsageException e) {
        refused = e.getMessage();
      }
      return Collections.singletonList(all.get(0).values[0] + "," + all.get(1).values[0] + " | " + refused)
          .iterator();
    }).collect();
    assertEquals(2, seen.size());
    for (String s : seen) {
      assertTrue(s.startsWith("0.5,1.5 | "), s);
      assertTrue(s.contains(Stranger.class.getName()) && s.contains("KryoSerializer"), s);
    }
  }
}
