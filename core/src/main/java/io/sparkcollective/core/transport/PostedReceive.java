package io.sparkcollective.core.transport;

import io.sparkcollective.core.kernel.WireBuffer;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Memory a waiting rank offers for the payload of one frame it expects (a range of its vector in direct memory),
 * so that a transport reading that frame from a socket puts the payload there instead of into a pooled frame the
 * rank would then copy it out of. The transport lends the memory to the frame it delivers ({@link Frame#lend}),
 * which the rank recognises by its {@link Frame#lender() lender}.
 *
 * <p>Only a frame whose header is exactly the one expected (sender, call, step, offset and length) is read
 * into it. The offers for the segments of one range form a chain (see {@link #then}). The rank
 * {@link #withdraw withdraws} every offer before it returns, also when it fails: from then on nothing writes into
 * the memory; a payload still being read moves into memory of the transport's own.
 */
public final class PostedReceive implements Frame.Lender {
  private static final int POSTED = 0;
  private static final int TAKEN = 1;
  private static final int DONE = 2;
  private static final int WITHDRAWN = 3;

  /** The reader that took an offer: it stops writing into the offered memory when told. */
  public interface Reader {
    /** Moves what was read of the payload for {@code posted} so far into memory of its own; reads no more there. */
    void reclaim(PostedReceive posted);
  }

  private final AtomicInteger state = new AtomicInteger(POSTED);
  private volatile Reader reader;
  private final int source;
  private final int stream;
  private final long seq;
  private final int step;
  private final long offset;
  private final int bytes;
  private final CallSignature call;
  private final WireBuffer window;
  /** Appended while readers walk the chain: volatile. */
  private volatile PostedReceive next;
  /** Of a chain's first offer: the last offer of the chain a reader took, or null. */
  private volatile PostedReceive lastTaken;

  /**
   * Offers {@code into}'s remaining bytes for the payload of the frame from {@code source} on ({@code stream},
   * {@code seq}) at {@code step} for element {@code offset} of call {@code call}.
   */
  public PostedReceive(int source, int stream, long seq, int step, long offset, CallSignature call,
      ByteBuffer into) {
    this.source = source;
    this.stream = stream;
    this.seq = seq;
    this.step = step;
    this.offset = offset;
    this.bytes = into.remaining();
    this.call = call;
    this.window = new WireBuffer(into.slice());
  }

  public int source() {
    return source;
  }

  /**
   * Offers {@code later}, the memory for the next frame expected from the same rank, with this one (a chain of
   * offers, one per segment of a range, posted and withdrawn together); returns it.
   */
  public PostedReceive then(PostedReceive later) {
    this.next = later;
    return later;
  }

  /** The offer for the frame after this one's in the same chain, or null. */
  public PostedReceive next() {
    return next;
  }

  /**
   * Of a chain's first offer: where a reader looks for the offer of the next payload, past the last one taken
   * (frames of one sender come in order, so the offers before it are behind; it keeps the walk short).
   */
  public PostedReceive nextToLookAt() {
    PostedReceive taken = lastTaken;
    return taken == null ? this : taken.next;
  }

  /** Of a chain's first offer: a reader took {@code taken}, an offer of the chain. */
  public void tookInChain(PostedReceive taken) {
    lastTaken = taken;
  }

  /** Whether {@code f} (its header set) with {@code payloadBytes} is the frame this memory waits for. */
  public boolean matches(Frame f, int payloadBytes) {
    return f.source() == source && f.stream() == stream && f.seq() == seq && f.step() == step
        && f.offset() == offset && payloadBytes == bytes && call.matches(f);
  }

  /**
   * A reader claims the offer for the message it is about to read the payload of (once): true if it may, then it
   * lends {@code f} the memory.
   */
  public boolean take(Reader by, Frame f) {
    reader = by;
    if (!state.compareAndSet(POSTED, TAKEN)) {
      return false;
    }
    window.size(0);
    f.lend(window, this, 0);
    return true;
  }

  /** The payload is in (the reader writes no more); the frame is about to be delivered. */
  public void filled() {
    state.compareAndSet(TAKEN, DONE);
  }

  /**
   * Ends the offer: after this returns nothing writes into the memory. A payload a reader is still reading moves
   * into memory of its own (the reader's {@link Reader#reclaim}).
   */
  public void withdraw() {
    if (state.compareAndSet(POSTED, WITHDRAWN) || state.get() != TAKEN) {
      return;
    }
    reader.reclaim(this);
  }

  /** The memory is the caller's: nothing to give back. */
  @Override
  public void giveBack(long loan, WireBuffer buffer) {
  }
}
