package io.sparkcollective.core.algorithm;

/**
 * An all-reduce over {@link Links}: on return every rank's vector holds the reduction (SUM for AVG).
 *
 * <p>Besides running, an algorithm states what composing it needs, so that an algorithm built on another
 * (the hierarchical one runs any of them across processes, over a window of steps and a piece of the vector)
 * never assumes how the inner one numbers its steps or cuts its vector.
 */
public interface AllReduceAlgorithm {
  void allReduce(Links links);

  /**
   * How many step numbers one call uses on {@code ranks} ranks for a vector of {@code length} elements cut into
   * segments of {@code segmentElements}: its frames carry steps {@code 0 .. steps - 1} of the links it is given.
   */
  long steps(int ranks, long length, int segmentElements);

  /**
   * The longest vector one call runs as a single pass, whose steps do not grow with its length (a composition
   * that cuts its vector into pieces no longer than this runs one pass per piece); unbounded if every length
   * is one pass.
   */
  default long passElements(int ranks, int segmentElements) {
    return Long.MAX_VALUE;
  }

  /**
   * Whether ranks of one process read each other's vectors in place while it runs (instead of receiving
   * frames): then a vector must be in its final wire form before anything is offered, since a peer may read
   * any part of it at any moment.
   */
  default boolean readsPeersInPlace() {
    return false;
  }
}
