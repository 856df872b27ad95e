package io.sparkcollective.core.algorithm;

/**
 * All an algorithm sees of the group: its rank, the group size, the vector's length, and typed moves of
 * element ranges of that vector to and from peers. Algorithms are pure logic over this interface; they
 * never see a socket, a frame or a buffer type (the engine's operation context implements it and checks
 * every received segment against what this rank called).
 *
 * <p>Every move of {@code n} elements is cut into segments of at most {@link #segmentElements()}; a move
 * of 0 elements still sends one empty segment, so that ranks that disagree on lengths are detected.
 * Sends never wait for the receiver. Each method throws the group's failure as soon as it happens.
 */
public interface Links {
  int rank();

  int size();

  /** Elements in this operation's vector. */
  int length();

  /** Most elements one segment carries. */
  int segmentElements();

  /** Sends elements {@code [off, off+n)} to {@code peer}, labelled {@code step}. */
  void send(int peer, int step, int off, int n);

  /** Receives {@code [off, off+n)} of {@code step} from {@code peer} and combines it into the vector. */
  void recvReduce(int peer, int step, int off, int n);

  /**
   * {@link #recvReduce} whose sums are this rank's final values of the range in the operation (nothing more is
   * combined into it): a wire narrower than the elements rounds them in the same pass.
   */
  default void recvReduceFinal(int peer, int step, int off, int n) {
    recvReduce(peer, step, off, n);
  }

  /** Receives {@code [off, off+n)} of {@code step} from {@code peer} and overwrites the vector with it. */
  void recvCopy(int peer, int step, int off, int n);

  /**
   * {@link #recvCopy} of {@code [off, off+n)} (at most one segment) from {@code peer}, then {@link #send} of the
   * same range to {@code to}, labelled {@code nextStep}: the chain step of an all-gather or a broadcast. An
   * implementation may pass the received segment on as it came instead of copying the range out of the vector
   * again (the values are the same).
   */
  default void recvCopySend(int peer, int step, int off, int n, int to, int nextStep) {
    recvCopy(peer, step, off, n);
    send(to, nextStep, off, n);
  }

  /** Keeps a copy of {@code [off, off+n)} (at most one segment) for a later {@code *FromStash}. */
  /**
   * Announces that the segments of {@code [off, off+n)} from {@code peer} at {@code step} will be copied into the
   * vector ({@link #recvCopy}, {@link #recvCopySend}) later in this operation, so that payloads arriving before
   * then may be read where they belong instead of into frames. A hint: nothing by default.
   */
  default void expectCopy(int peer, int step, int off, int n) {
  }

  void stash(int off, int n);

  /** Overwrites {@code [off, off+n)} with the stashed copy. */
  void copyFromStash(int off, int n);

  /** Combines the stashed copy into {@code [off, off+n)}. */
  void reduceFromStash(int off, int n);

  /** {@link #reduceFromStash} whose sums are final (see {@link #recvReduceFinal}). */
  default void reduceFromStashFinal(int off, int n) {
    reduceFromStash(off, n);
  }

  /**
   * Rounds {@code [off, off+n)} to what the wire carries (bfloat16 under wire compression; otherwise nothing),
   * so that a rank's own copy of a value equals what its peers receive.
   */
  default void roundToWire(int off, int n) {
  }

  /**
   * {@link #roundToWire}, except that a narrower wire may round each value of the range at its first move
   * instead of now, in the pass of that move; nothing outside the range is touched either way.
   */
  default void roundToWireOnMove(int off, int n) {
    roundToWire(off, n);
  }

  /**
   * Rounds whatever of {@code [off, off+n)} does not hold what the wire carries yet (values summed, or sent with
   * their rounding still pending), and nothing outside the range. A range offered to ranks of this process for a
   * {@link #recvCopy} must be settled first: they copy it as it stands.
   */
  default void settleWire(int off, int n) {
    roundToWire(off, n);
  }

  /** Number of segments a move of {@code n} elements takes (at least 1). */
  /**
   * True if this rank can hand ranges of its vector to ranks of its own process by reference
   * ({@link #sendShared}) instead of copying them into frames.
   */
  default boolean canShare() {
    return false;
  }

  /**
   * Offers {@code [off, off+n)} of this rank's vector to {@code peer}, a rank of the same process, which reads
   * it in place with one {@link #recvReduce} or {@link #recvCopy} of the same range. The range must not change
   * until {@link #awaitShared} returns. Without sharing, this is {@link #send}.
   */
  default void sendShared(int peer, int step, int off, int n) {
    send(peer, step, off, n);
  }

  /** Waits until every range offered by {@link #sendShared} in this operation has been read. */
  default void awaitShared() {
  }

  default int segmentsOf(int n) {
    int seg = segmentElements();
    return n == 0 ? 1 : (n + seg - 1) / seg;
  }
}
