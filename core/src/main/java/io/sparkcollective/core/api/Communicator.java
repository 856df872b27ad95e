package io.sparkcollective.core.api;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A group of {@link #size()} ranks that run collective operations together; the central abstraction of
 * this library. Every rank of the group holds one Communicator and calls the same operations, with the
 * same lengths, types, reductions and roots, in the same order (per tag, see {@link CollectiveOptions}).
 *
 * <p>Buffers are reduced in place. Results are bitwise identical on every rank and, for a given group
 * size and algorithm, from run to run.
 *
 * <p>Each blocking operation has an {@code *Async} twin that returns at once; the caller must leave the
 * buffer alone until the future completes. Async operations of one communicator run one after another on
 * its own thread, in call order, so a training loop can overlap communication of one bucket with compute.
 *
 * <p>Failures: see {@link CollectiveException}. A failed group stays failed: every later call throws the
 * first failure; build a new group. Argument errors ({@link CollectiveUsageException}) leave it usable.
 *
 * <p>How the engine fits together: this interface is implemented in {@code io.sparkcollective.core.engine}
 * over a {@code transport.Transport} (in-JVM or TCP); the engine picks an algorithm from
 * {@code algorithm}, which moves typed segments through an operation context, and the element-wise work
 * happens in {@code kernel}.
 */
public interface Communicator extends AutoCloseable {

  /** This rank, in [0, size). */
  int rank();

  /** Number of ranks in the group. */
  int size();

  // ---------------------------------------------------------------- all-reduce

  /** Reduces {@code data} element-wise across all ranks; every rank ends with the result. */
  void allReduce(DataBuffer data, ReduceOp op, CollectiveOptions options);

  CompletableFuture<Void> allReduceAsync(DataBuffer data, ReduceOp op, CollectiveOptions options);

  default void allReduce(DataBuffer data, ReduceOp op) {
    allReduce(data, op, CollectiveOptions.DEFAULT);
  }

  default void allReduce(float[] data, ReduceOp op) {
    allReduce(DataBuffer.of(data), op, CollectiveOptions.DEFAULT);
  }

  /** Reduces {@code data[offset, offset+length)}: one bucket of a large flat gradient. */
  default void allReduce(float[] data, int offset, int length, ReduceOp op) {
    allReduce(DataBuffer.of(data, offset, length), op, CollectiveOptions.DEFAULT);
  }

  default void allReduce(double[] data, ReduceOp op) {
    allReduce(DataBuffer.of(data), op, CollectiveOptions.DEFAULT);
  }

  default void allReduce(double[] data, int offset, int length, ReduceOp op) {
    allReduce(DataBuffer.of(data, offset, length), op, CollectiveOptions.DEFAULT);
  }

  default void allReduce(int[] data, ReduceOp op) {
    allReduce(DataBuffer.of(data), op, CollectiveOptions.DEFAULT);
  }

  default void allReduce(int[] data, int offset, int length, ReduceOp op) {
    allReduce(DataBuffer.of(data, offset, length), op, CollectiveOptions.DEFAULT);
  }

  default void allReduce(long[] data, ReduceOp op) {
    allReduce(DataBuffer.of(data), op, CollectiveOptions.DEFAULT);
  }

  default void allReduce(long[] data, int offset, int length, ReduceOp op) {
    allReduce(DataBuffer.of(data, offset, length), op, CollectiveOptions.DEFAULT);
  }

  default CompletableFuture<Void> allReduceAsync(DataBuffer data, ReduceOp op) {
    return allReduceAsync(data, op, CollectiveOptions.DEFAULT);
  }

  default CompletableFuture<Void> allReduceAsync(float[] data, ReduceOp op) {
    return allReduceAsync(DataBuffer.of(data), op, CollectiveOptions.DEFAULT);
  }

  default CompletableFuture<Void> allReduceAsync(float[] data, int offset, int length, ReduceOp op) {
    return allReduceAsync(DataBuffer.of(data, offset, length), op, CollectiveOptions.DEFAULT);
  }

  default CompletableFuture<Void> allReduceAsync(double[] data, ReduceOp op) {
    return allReduceAsync(DataBuffer.of(data), op, CollectiveOptions.DEFAULT);
  }

  // ---------------------------------------------------------------- reduce-scatter

  /**
   * Reduces {@code data} across ranks and leaves this rank's block of the result (see {@link Blocks}) in
   * place; the other blocks of {@code data} are used as workspace and hold partial results afterwards.
   */
  void reduceScatter(DataBuffer data, ReduceOp op, CollectiveOptions options);

  CompletableFuture<Void> reduceScatterAsync(DataBuffer data, ReduceOp op, CollectiveOptions options);

  default void reduceScatter(float[] data, ReduceOp op) {
    reduceScatter(DataBuffer.of(data), op, CollectiveOptions.DEFAULT);
  }

  default void reduceScatter(DataBuffer data, ReduceOp op) {
    reduceScatter(data, op, CollectiveOptions.DEFAULT);
  }

  // ---------------------------------------------------------------- all-gather

  /**
   * Concatenates every rank's {@code send} in rank order into {@code recv}, whose length must be
   * {@code size() * send.length()} of the same type.
   */
  void allGather(DataBuffer send, DataBuffer recv, CollectiveOptions options);

  CompletableFuture<Void> allGatherAsync(DataBuffer send, DataBuffer recv, CollectiveOptions options);

  default void allGather(DataBuffer send, DataBuffer recv) {
    allGather(send, recv, CollectiveOptions.DEFAULT);
  }

  default void allGather(float[] send, float[] recv) {
    allGather(DataBuffer.of(send), DataBuffer.of(recv), CollectiveOptions.DEFAULT);
  }

  default void allGather(long[] send, long[] recv) {
    allGather(DataBuffer.of(send), DataBuffer.of(recv), CollectiveOptions.DEFAULT);
  }

  // ---------------------------------------------------------------- broadcast

  /** Copies {@code root}'s {@code data} into every other rank's {@code data}. */
  void broadcast(DataBuffer data, int root, CollectiveOptions options);

  CompletableFuture<Void> broadcastAsync(DataBuffer data, int root, CollectiveOptions options);

  default void broadcast(DataBuffer data, int root) {
    broadcast(data, root, CollectiveOptions.DEFAULT);
  }

  default void broadcast(float[] data, int root) {
    broadcast(DataBuffer.of(data), root, CollectiveOptions.DEFAULT);
  }

  default void broadcast(double[] data, int root) {
    broadcast(DataBuffer.of(data), root, CollectiveOptions.DEFAULT);
  }

  // ---------------------------------------------------------------- barrier

  /** Returns once every rank has entered the barrier. */
  void barrier(CollectiveOptions options);

  CompletableFuture<Void> barrierAsync(CollectiveOptions options);

  default void barrier() {
    barrier(CollectiveOptions.DEFAULT);
  }

  // ---------------------------------------------------------------- point-to-point

  /** Sends {@code data} to {@code peer}, which must call {@link #recv} with the same length and type. */
  void send(DataBuffer data, int peer, CollectiveOptions options);

  /** Receives into {@code data} what {@code peer} sent with {@link #send}. */
  void recv(DataBuffer data, int peer, CollectiveOptions options);

  CompletableFuture<Void> sendAsync(DataBuffer data, int peer, CollectiveOptions options);

  CompletableFuture<Void> recvAsync(DataBuffer data, int peer, CollectiveOptions options);

  default void send(float[] data, int peer) {
    send(DataBuffer.of(data), peer, CollectiveOptions.DEFAULT);
  }

  default void recv(float[] data, int peer) {
    recv(DataBuffer.of(data), peer, CollectiveOptions.DEFAULT);
  }

  // ---------------------------------------------------------------- objects

  /** Every rank's {@code value}, in rank order, serialised with the communicator's {@link ObjectSerializer}. */
  <T> List<T> allGatherObjects(T value, CollectiveOptions options);

  default <T> List<T> allGatherObjects(T value) {
    return allGatherObjects(value, CollectiveOptions.DEFAULT);
  }

  /** {@code root}'s {@code value} on every rank (other ranks' arguments are ignored and may be null). */
  <T> T broadcastObject(T value, int root, CollectiveOptions options);

  default <T> T broadcastObject(T value, int root) {
    return broadcastObject(value, root, CollectiveOptions.DEFAULT);
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Throws the group's failure if it has failed (for example a peer was lost while idle), or why a peer left
   * the group (closed its communicator), since no collective can complete without it; else returns.
   */
  void checkHealth();

  /**
   * Releases this rank's resources and tells peers it left; pending async operations fail. Idempotent.
   * Attempts every cleanup step and throws the first error with the others suppressed.
   */
  @Override
  void close();
}
