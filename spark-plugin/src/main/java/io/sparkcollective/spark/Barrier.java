package io.sparkcollective.spark;

import java.io.Serializable;
import java.util.Iterator;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import scala.collection.JavaConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * Barrier stages for Java: {@code JavaRDD} has no {@code barrier()}, so this goes through the Scala RDD.
 * The same source builds against Scala 2.12 and 2.13.
 */
public final class Barrier {
  private Barrier() {}

  /** {@code rdd.barrier().mapPartitions(f)}: every partition runs at once, as one group. */
  public static <T, R> JavaRDD<R> mapPartitions(JavaRDD<T> rdd, FlatMapFunction<Iterator<T>, R> f) {
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
