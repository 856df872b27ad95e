package io.sparkcollective.examples

import io.sparkcollective.core.api.ReduceOp
import io.sparkcollective.spark.Collective
import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.rdd.RDD

/**
 * The README's Scala snippet, compiled and run: every task of a barrier stage sums its partition's gradient
 * with the others' and ends up holding the whole sum; a shuffle after the stage makes a failed attempt retry.
 * Run with the plugin, e.g. {{{
 *   examples/spark-submit.sh --master 'local-cluster[2,1,1024]' --jars spark-plugin/target/spark-collective-spark-*.jar \
 *     --class io.sparkcollective.examples.ScalaQuickStart examples/target/spark-collective-examples-*.jar
 * }}}
 */
object ScalaQuickStart {
  val Features = 8

  /** A partition's gradient: the sum of its rows, standing in for a model's. */
  def localGradient(rows: Iterator[Array[Float]]): Array[Float] = {
    val grad = new Array[Float](Features)
    for (row <- rows; i <- 0 until Features) {
      grad(i) += row(i)
    }
    grad
  }

  /** The snippet: each partition's gradient, summed across the barrier stage. */
  def synced(data: RDD[Array[Float]]): RDD[Array[Float]] =
    data.barrier().mapPartitions { rows =>
      val grad = localGradient(rows)
      Collective.communicator().allReduce(grad, ReduceOp.SUM)
      Iterator(grad)
    }.repartition(data.getNumPartitions)

  def main(args: Array[String]): Unit = {
    val sc = new SparkContext(new SparkConf().setAppName("spark-collective Scala quick start"))
    try {
      val partitions = 2
      val data = sc.parallelize(0 until 400, partitions)
        .map(r => Array.tabulate(Features)(j => ((r * 31 + j) % 17).toFloat))
      val result = synced(data).collect()
      // What Spark computes without the plugin: the rows summed by reduce (small integers: exact in float).
      val expected = data.reduce((a, b) => a.zip(b).map { case (x, y) => x + y })
      val ok = result.length == partitions && result.forall(_.sameElements(expected))
      println(s"scala quick start: ${result.length} tasks, each holds the sum of all rows: $ok " +
        s"(${expected.mkString(", ")})")
      if (!ok) {
        sys.exit(1)
      }
    } finally {
      sc.stop()
    }
  }
}
