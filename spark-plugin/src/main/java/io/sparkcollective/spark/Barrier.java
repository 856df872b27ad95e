package io.sparkcollective.spark;

import java.io.Serializable;
import java.util.Iterator;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import scala.Tuple2;
import scala.collection.JavaConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * Barrier stages for Java: {@code JavaRDD} has no {@code barrier()}, so this goes through the Scala RDD.
 * The same source builds against Scala 2.12 and 2.13.
 *
 * <p>Spark resubmits a failed barrier stage only when it is a shuffle-map stage; a failed barrier result
 * stage (a barrier {@code mapPartitions} followed directly by {@code collect()}) aborts the job. So the
 * default form, {@link #mapPartitions}, ends the barrier stage with a shuffle that keeps every partition's
 * output in its partition and in order: when a task fails or an executor dies, Spark retries the stage and a
 * new group forms. {@link #mapPartitionsWithoutRetry} skips that shuffle for outputs too large to move
 * twice, at the price of a failed job on any task failure.
 */
public final class Barrier {
  private Barrier() {}

  /**
   * {@code rdd.barrier().mapPartitions(f)}, retried by Spark as a whole when one of its tasks fails: every
   * partition runs at once, as one group; partition {@code i} of the result holds what task {@code i}
   * returned, in order.
   */
  public static <T, R> JavaRDD<R> mapPartitions(JavaRDD<T> rdd, FlatMapFunction<Iterator<T>, R> f) {
    int partitions = rdd.getNumPartitions();
    JavaRDD<Tuple2<Integer, R>> keyed = mapPartitionsWithoutRetry(rdd, f).mapPartitionsWithIndex(
        (index, it) -> new Iterator<Tuple2<Integer, R>>() {
          @Override
          public boolean hasNext() {
            return it.hasNext();
          }

          @Override
          public Tuple2<Integer, R> next() {
            return new Tuple2<>(index, it.next());
          }
        }, true);
    // Key = partition index and a hash partitioner with as many partitions: partition i only reads map output
    // i, so the order inside a partition is kept.
    return JavaPairRDD.fromJavaRDD(keyed).partitionBy(new HashPartitioner(partitions)).values();
  }

  /**
   * {@code rdd.barrier().mapPartitions(f)} as Spark has it: cheaper (no shuffle of the outputs), but if it is
   * the last stage of a job, a failed task aborts the job instead of retrying the stage.
   */
  public static <T, R> JavaRDD<R> mapPartitionsWithoutRetry(JavaRDD<T> rdd, FlatMapFunction<Iterator<T>, R> f) {
    ClassTag<R> tag = ClassTag$.MODULE$.apply(Object.class);
    return new JavaRDD<>(rdd.rdd().barrier().mapPartitions(new PartitionFunction<>(f), false, tag), tag);
  }

  private static final class PartitionFunction<T, R>
      extends AbstractFunction1<scala.collection.Iterator<T>, scala.collection.Iterator<R>> implements Serializable {
    private static final long serialVersionUID = 1L;
    private final FlatMapFunction<Iterator<T>, R> f;

    PartitionFunction(FlatMapFunction<Iterator<T>, R> f) {
      this.f = f;
    }

    @Override
    public scala.collection.Iterator<R> apply(scala.collection.Iterator<T> in) {
      try {
        return JavaConverters.asScalaIterator(f.call(JavaConverters.asJavaIterator(in)));
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
