package io.sparkcollective.examples.ml;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.storage.StorageLevel;

/** Cached RDDs of shards (one shard per partition), built where the data lives. */
public final class Data {
  private Data() {}

  /** Synthetic rows from {@code teacher}, generated on the executors: {@code rows} in all. */
  public static JavaRDD<Shard> synthetic(JavaSparkContext sc, Teacher teacher, int rows, int partitions, long seed) {
    List<Integer> ids = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      ids.add(p);
    }
    int base = rows / partitions;
    int extra = rows % partitions;
    return cache(sc.parallelize(ids, partitions)
        .map(p -> Shard.synthetic(teacher, base + (p < extra ? 1 : 0), seed, p)));
  }

  /** Rows read on the driver (e.g. a LIBSVM file), spread over {@code partitions}. */
  public static JavaRDD<Shard> of(JavaSparkContext sc, List<LabeledRow> rows, int features, int partitions) {
    return cache(sc.parallelize(rows, partitions)
        .mapPartitions(it -> Collections.singletonList(Shard.of(it, features)).iterator()));
  }

  private static JavaRDD<Shard> cache(JavaRDD<Shard> shards) {
    shards.persist(StorageLevel.MEMORY_ONLY());
    shards.count();
    return shards;
  }
}
