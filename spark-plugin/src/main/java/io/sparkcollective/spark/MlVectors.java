package io.sparkcollective.spark;

import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.ReduceOp;
import org.apache.spark.ml.linalg.DenseVector;
import org.apache.spark.ml.linalg.Vector;

/**
 * Collectives on Spark ML vectors ({@code org.apache.spark.ml.linalg}). A {@link DenseVector}'s values
 * array is its storage, so these work in place with no copy: {@code MlVectors.allReduce(comm, grad, SUM)}.
 */
public final class MlVectors {
  private MlVectors() {}

  /** All-reduces {@code v} in place; every rank passes a vector of the same size. Returns {@code v}. */
  public static DenseVector allReduce(Communicator comm, Vector v, ReduceOp op) {
    DenseVector d = dense(comm, v, "allReduce");
    comm.allReduce(d.values(), op);
    return d;
  }

  /** Overwrites {@code v} on every rank with the root's values, in place. Returns {@code v}. */
  public static DenseVector broadcast(Communicator comm, Vector v, int root) {
    DenseVector d = dense(comm, v, "broadcast");
    comm.broadcast(d.values(), root);
    return d;
  }

  private static DenseVector dense(Communicator comm, Vector v, String operation) {
    if (v == null) {
      throw new CollectiveUsageException("rank " + comm.rank() + ": " + operation + " of a null vector");
    }
    if (!(v instanceof DenseVector)) {
      throw new CollectiveUsageException("rank " + comm.rank() + ": " + operation + " needs a DenseVector (in place), "
          + "got " + v.getClass().getSimpleName() + " of size " + v.size() + "; convert it with v.toDense()");
    }
    return (DenseVector) v;
  }
}
