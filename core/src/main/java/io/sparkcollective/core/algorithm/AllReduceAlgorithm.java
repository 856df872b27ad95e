package io.sparkcollective.core.algorithm;

/** An all-reduce over {@link Links}: on return every rank's vector holds the reduction (SUM for AVG). */
public interface AllReduceAlgorithm {
  void allReduce(Links links);
}
