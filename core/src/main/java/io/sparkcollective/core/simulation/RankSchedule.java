package io.sparkcollective.core.simulation;

import io.sparkcollective.core.algorithm.AllReduceAlgorithm;
import io.sparkcollective.core.algorithm.Links;
import java.util.Arrays;

/**
 * What one rank does in one all-reduce, in order: the moves an algorithm made on these links, recorded
 * without moving anything. The library's algorithms are oblivious (what a rank sends and receives depends on
 * its rank, the group size and the vector's length, never on the values or on timing), so recording each
 * rank on its own, one after another, gives the schedule every rank follows when they run together; the
 * {@link NetworkSimulator} replays the schedules against each other in virtual time.
 *
 * <p>One record is five ints: the move, peer, step, offset, elements. Moves of many elements stay one record
 * (the simulator cuts them into segments as the engine does).
 */
public final class RankSchedule implements Links {
  static final int SEND = 0;
  static final int SEND_SHARED = 1;
  static final int RECV_REDUCE = 2;
  static final int RECV_COPY = 3;
  static final int STASH = 4;
  static final int COPY_FROM_STASH = 5;
  static final int REDUCE_FROM_STASH = 6;
  static final int AWAIT_SHARED = 7;
  static final int FIELDS = 5;

  private final int rank;
  private final int size;
  private final int length;
  private final int segmentElements;
  private final boolean canShare;
  private int[] ops = new int[FIELDS * 16];
  private int count;
  private int maxStep = -1;

  private RankSchedule(int rank, int size, int length, int segmentElements, boolean canShare) {
    this.rank = rank;
    this.size = size;
    this.length = length;
    this.segmentElements = segmentElements;
    this.canShare = canShare;
  }

  /**
   * Runs {@code algorithm} as rank {@code rank} of {@code size} on a vector of {@code length} elements cut
   * into segments of {@code segmentElements}, and returns what it did. With {@code canShare} the rank reads
   * ranks of its own host in place, as ranks of one executor do.
   */
  public static RankSchedule record(AllReduceAlgorithm algorithm, int rank, int size, int length,
      int segmentElements, boolean canShare) {
    return record(algorithm, rank, size, length, segmentElements, canShare, 1);
  }

  /**
   * The same for {@code operations} all-reduces back to back, as a training loop or a benchmark calls them: a
   * rank starts the next as soon as it is done with the last (messages between two ranks stay in order, so the
   * operations' frames cannot be confused, as on a real connection).
   */
  public static RankSchedule record(AllReduceAlgorithm algorithm, int rank, int size, int length,
      int segmentElements, boolean canShare, int operations) {
    if (size < 1 || rank < 0 || rank >= size || length < 0 || segmentElements < 1) {
      throw new IllegalArgumentException("rank " + rank + " of " + size + ", " + length + " elements in segments of "
          + segmentElements);
    }
    if (operations < 1) {
      throw new IllegalArgumentException("operations must be at least 1, was " + operations);
    }
    RankSchedule s = new RankSchedule(rank, size, length, segmentElements, canShare);
    for (int op = 0; op < operations && size > 1; op++) {
      algorithm.allReduce(s);
    }
    s.ops = Arrays.copyOf(s.ops, s.count * FIELDS);
    return s;
  }

  private void add(int move, int peer, int step, int off, int n) {
    if (off < 0 || n < 0 || off > length - n) {
      throw new IllegalStateException("rank " + rank + " moved [" + off + ", " + off + "+" + n + ") of a vector of "
          + length);
    }
    if (peer != -1 && (peer < 0 || peer >= size || peer == rank)) {
      throw new IllegalStateException("rank " + rank + " of " + size + " addressed rank " + peer);
    }
    if (count * FIELDS == ops.length) {
      ops = Arrays.copyOf(ops, ops.length * 2);
    }
    int i = count++ * FIELDS;
    ops[i] = move;
    ops[i + 1] = peer;
    ops[i + 2] = step;
    ops[i + 3] = off;
    ops[i + 4] = n;
    maxStep = Math.max(maxStep, step);
  }

  /** Number of moves recorded. */
  public int moves() {
    return count;
  }

  int move(int i) {
    return ops[i * FIELDS];
  }

  int peer(int i) {
    return ops[i * FIELDS + 1];
  }

  int step(int i) {
    return ops[i * FIELDS + 2];
  }

  int offset(int i) {
    return ops[i * FIELDS + 3];
  }

  int elements(int i) {
    return ops[i * FIELDS + 4];
  }

  /** Highest step number this rank used, -1 if none: an algorithm's frames carry steps below its stated count. */
  public int maxStep() {
    return maxStep;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public int length() {
    return length;
  }

  @Override
  public int segmentElements() {
    return segmentElements;
  }

  @Override
  public void send(int peer, int step, int off, int n) {
    add(SEND, peer, step, off, n);
  }

  @Override
  public void recvReduce(int peer, int step, int off, int n) {
    add(RECV_REDUCE, peer, step, off, n);
  }

  @Override
  public void recvCopy(int peer, int step, int off, int n) {
    add(RECV_COPY, peer, step, off, n);
  }

  @Override
  public void stash(int off, int n) {
    if (n > segmentElements) {
      throw new IllegalStateException("rank " + rank + " stashed " + n + " elements, more than one segment");
    }
    add(STASH, -1, -1, off, n);
  }

  @Override
  public void copyFromStash(int off, int n) {
    add(COPY_FROM_STASH, -1, -1, off, n);
  }

  @Override
  public void reduceFromStash(int off, int n) {
    add(REDUCE_FROM_STASH, -1, -1, off, n);
  }

  @Override
  public boolean canShare() {
    return canShare;
  }

  @Override
  public void sendShared(int peer, int step, int off, int n) {
    if (!canShare) {
      send(peer, step, off, n);
      return;
    }
    add(SEND_SHARED, peer, step, off, n);
  }

  @Override
  public void awaitShared() {
    if (canShare) {
      add(AWAIT_SHARED, -1, -1, 0, 0);
    }
  }
}
