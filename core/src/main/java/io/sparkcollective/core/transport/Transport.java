package io.sparkcollective.core.transport;

import io.sparkcollective.core.api.CollectiveException;

/**
 * Moves {@link Frame}s between the ranks of one group and keeps the group's failure state: what the
 * algorithms' links stand on. Implementations: {@code transport.local.LocalTransport} (ranks as threads of
 * one JVM) and the TCP transport; the tests' {@code transport.fault.FaultInjectingTransport} wraps either.
 *
 * <p>Contract: {@link #send} never waits for the receiver (it queues), frames between two ranks arrive in
 * the order sent, and {@link #receive} matches frames by (source, stream, sequence). Once the transport has
 * failed ({@link #abort}, a lost link, a peer's ABORT), every blocked and later {@link #receive} throws the
 * first failure.
 */
public interface Transport extends AutoCloseable {
  int rank();

  int size();

  /**
   * The process ("node") of every rank, as small integers: ranks with the same value share a process and
   * exchange data in memory. By default every rank is its own node.
   */
  default int[] nodes() {
    int[] nodes = new int[size()];
    for (int i = 0; i < nodes.length; i++) {
      nodes[i] = i;
    }
    return nodes;
  }

  /**
   * Whether this rank reaches every peer through memory: ranks of its process, and endpoints of its host through
   * shared-memory rings. Every rank of a group answers alike (it depends on where the group's endpoints are and
   * on the cluster's settings), so algorithm choices made on it agree. False by default.
   */
  default boolean memoryToAll() {
    return false;
  }

  /**
   * Whether every rank of this group is on one host (one address): where AUTO's table was measured, so that a
   * group of few processes there follows it, while one across hosts measures its link. Every rank of a group
   * answers alike (it depends on the group's addresses only). True by default.
   */
  default boolean oneHost() {
    return true;
  }

  /**
   * Whether every payload between ranks of this group crosses a socket: false when the group lives in one
   * process, or when executors of one host among its endpoints may share memory. Every rank of a group answers
   * alike (from the group's addresses and the cluster's settings), so the segment size chosen on it agrees.
   * False by default.
   */
  default boolean socketsOnly() {
    return false;
  }

  /** What this rank received over network links from each peer, and how fast; null if it has no such links. */
  default LinkReceipts receipts() {
    return null;
  }

  /** How to name a rank in messages, e.g. {@code rank 3} or {@code rank 3 (10.0.0.5:7077)}. */
  String describe(int rank);

  /** A frame with room for {@code payloadBytes}; the caller owns it. */
  Frame acquire(int payloadBytes);

  /**
   * A frame with room for {@code payloadBytes} that the caller fills and {@link #send sends} to {@code peer} at
   * once, or releases: nothing else may be sent, received or waited for in between, since the transport may
   * lend the frame memory on the way to that peer (a place in its shared-memory ring) and hold that way for it
   * until then. The caller owns it.
   */
  default Frame acquireFor(int peer, int payloadBytes) {
    return acquire(payloadBytes);
  }

  /** Gives a frame back; the caller must own it. */
  void release(Frame frame);

  /** Largest payload one frame carries. */
  int maxFrameBytes();

  /**
   * Queues {@code frame} for {@code peer}; ownership passes to the transport, also when this throws.
   *
   * @throws CollectiveException if the link to {@code peer} is gone or the transport has failed
   */
  void send(int peer, Frame frame);

  /**
   * Sends {@code frame} (its header; its own payload is ignored) to {@code peer} with the remaining bytes of
   * {@code payload} as its payload, read from there without a copy where the link to {@code peer} can: the
   * transport reads {@code payload} only during this call (what a socket does not take at once it copies), so
   * the caller may change that memory as soon as this returns. True if it sent (the frame's ownership passed to
   * the transport, also when this throws); false, with frame and payload untouched, where it cannot send that
   * way now (then copy the payload into a frame and {@link #send} it). False by default.
   *
   * @throws CollectiveException if the link to {@code peer} is gone or the transport has failed
   */
  default boolean sendFrom(int peer, Frame frame, java.nio.ByteBuffer payload) {
    return false;
  }

  /**
   * Offers the memory of {@code posted} and of the offers chained after it for the payloads of the frames they
   * name (see {@link PostedReceive}) until the caller {@link #unpost}s them, which it must do before it returns;
   * true if this transport may read payloads there, false if it never does (then nothing need be withdrawn).
   * False by default.
   */
  default boolean post(PostedReceive posted) {
    return false;
  }

  /** Ends the offers {@link #post} took: nothing writes into their memory after this returns. */
  default void unpost(PostedReceive posted) {
  }

  /**
   * Waits for the frame from {@code peer} on {@code stream} with sequence {@code seq}. The caller owns the
   * returned frame.
   *
   * @return the frame, or null when {@code deadlineNanos} (on this transport's clock) passed first
   * @throws CollectiveException the transport's failure, as soon as it fails
   * @throws io.sparkcollective.core.api.CollectiveCancelledException if the calling thread is interrupted
   */
  Frame receive(int peer, int stream, long seq, long deadlineNanos);

  /**
   * Describes a frame already queued for ({@code stream}, {@code seq}) from a rank other than {@code except}
   * whose call differs from {@code call}, or returns null. See {@link Inbox#findDisagreement}.
   */
  String findDisagreement(int stream, long seq, int except, CallSignature call);

  /** Fails this rank with {@code cause} (kept only if it is the first failure) and tells every peer. */
  void abort(CollectiveException cause);

  /** The first failure, or null while healthy. */
  CollectiveException failure();

  /** Why a peer is no longer in the group (it left), or null while every peer is; not a failure by itself. */
  default CollectiveException departure() {
    return null;
  }

  /** Drops the link to {@code peer} as if it broke: both ends fail with a lost-peer error. */
  void disconnect(int peer, String reason);

  /**
   * The calling thread starts an operation (a collective or a point-to-point call) on this transport; every call
   * is followed by one {@link #operationEnds}, also when the operation fails. A transport whose sockets waiting
   * threads drive keeps its own progress thread out of the way meanwhile. Nothing by default.
   */
  default void operationBegins() {
  }

  /** The calling thread's operation (see {@link #operationBegins}) ended. */
  default void operationEnds() {
  }

  /** Current monotonic time of the clock deadlines are measured on. */
  long nanoTime();

  /** Leaves the group: peers learn this rank left; queued frames are released. Idempotent. */
  @Override
  void close();
}
