package io.sparkcollective.core.engine;

import io.sparkcollective.core.algorithm.Links;
import io.sparkcollective.core.api.Cancellation;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveKind;
import io.sparkcollective.core.api.CollectiveMismatchException;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.kernel.Elements;
import io.sparkcollective.core.kernel.Scratch;
import io.sparkcollective.core.transport.CallSignature;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.PostedReceive;
import io.sparkcollective.core.transport.Transport;
import java.util.concurrent.TimeUnit;

/**
 * The {@link Links} of one running operation: stamps every outgoing segment with the operation's header,
 * checks every incoming one against what this rank called, and moves payload between frames and the
 * operation's {@link Elements}. Reused across operations (it owns the {@link Scratch}); used by one thread
 * at a time, between {@link #begin} and {@link #end}.
 */
final class OpContext implements Links {
  /** How often a waiting receive looks for frames that show the ranks disagree (and for cancellation). */
  private static final long DISAGREEMENT_CHECK_NANOS = Tuning.DISAGREEMENT_CHECK_NANOS;

  private final Transport transport;
  private final Cancellation cancellation;
  private final int rank;
  private final int size;
  private final int segmentBytes;
  final Scratch scratch = new Scratch();

  private CollectiveKind kind;
  private int tag;
  private int stream;
  private long seq;
  private Elements elements;
  private ReduceOp op;
  private int opCode;
  private int root;
  private int algorithmCode;
  private CallSignature signature;
  private long timeoutMs;
  private long deadlineNanos;
  private int segmentElements;
  private Frame stash;
  /** Offers of ranges of the vector for payloads from each peer (see expectCopy), first and last of each chain. */
  private PostedReceive[] offersFirst;
  private PostedReceive[] offersLast;
  /** Peers whose copies in this op the algorithm announced (see expectCopy), or null before any. */
  private boolean[] announced;
  private int[] announcedPeers;
  private int announcedCount;
  /** The peers with offers, in the order offered. */
  private int[] offerPeers;
  private int offerCount;
  /** A frame for the header of a segment sent from the vector's memory, kept while the transport declines. */
  private Frame header;
  /** Ranges this rank offered to ranks of its process in the current operation (see sendShared). */
  private SharedRange[] offered = new SharedRange[4];
  private int offeredCount;
  /** Ranges read in earlier operations, reused for new offers (a piece-wise operation offers many). */
  private SharedRange[] spare = new SharedRange[4];
  private int spareCount;

  /** {@code segmentBytes}: the group's segment size, at most the transport's largest frame. */
  OpContext(Transport transport, int segmentBytes, Cancellation cancellation) {
    this.transport = transport;
    this.cancellation = cancellation;
    this.rank = transport.rank();
    this.size = transport.size();
    this.segmentBytes = segmentBytes;
  }

  /** Prepares for one operation; the deadline starts now. */
  void begin(CollectiveKind kind, int tag, int stream, long seq, Elements elements, ReduceOp op, int root,
      int algorithmCode, long timeoutMs) {
    this.kind = kind;
    this.tag = tag;
    this.stream = stream;
    this.seq = seq;
    this.elements = elements;
    this.op = op;
    this.opCode = op == null ? ReduceOp.NONE_WIRE_CODE : op.wireCode();
    this.root = root;
    this.algorithmCode = algorithmCode;
    this.signature = null;
    this.timeoutMs = timeoutMs;
    this.deadlineNanos = transport.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    this.segmentElements = Math.max(1, segmentBytes / elements.wireElementBytes());
  }

  /** Releases what the operation held; safe after a failure (ranges still offered are withdrawn). */
  void end() {
    withdrawOffers();
    if (stash != null) {
      transport.release(stash);
      stash = null;
    }
    if (header != null) {
      transport.release(header);
      header = null;
    }
    for (int i = 0; i < offeredCount; i++) {
      if (offered[i] != null) {
        offered[i].revoke();
        offered[i] = null;
      }
    }
    offeredCount = 0;
    elements = null;
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
    return elements.length();
  }

  @Override
  public int segmentElements() {
    return segmentElements;
  }

  @Override
  public void send(int peer, int step, int off, int n) {
    int segments = segmentsOf(n);
    for (int k = 0; k < segments; k++) {
      int so = off + k * segmentElements;
      int sn = Math.min(segmentElements, n - k * segmentElements);
      if (sendFrom(peer, step, so, sn)) {
        continue;
      }
      Frame f = transport.acquireFor(peer, sn * elements.wireElementBytes());
      try {
        stamp(f, step, so);
        elements.write(so, sn, f.payload());
      } catch (RuntimeException e) {
        transport.release(f);
        throw e;
      }
      transport.send(peer, f);
    }
  }

  /**
   * Sends the segment from where the vector lies, without copying it into a frame, if its bytes are the wire's
   * (a little-endian vector in direct memory) and the transport can send that way to {@code peer}; true if so.
   */
  private boolean sendFrom(int peer, int step, int so, int sn) {
    java.nio.ByteBuffer range = elements.wireRange(so, sn);
    if (range == null) {
      return false;
    }
    Frame h = header != null ? header : transport.acquire(0);
    header = null;
    stamp(h, step, so);
    // Once sendFrom is called the frame is the transport's, unless it declines: then it is kept for the next
    // segment (and released at the end).
    if (transport.sendFrom(peer, h, range)) {
      return true;
    }
    header = h;
    return false;
  }

  @Override
  public boolean canShare() {
    return elements.shareable();
  }

  @Override
  public void sendShared(int peer, int step, int off, int n) {
    if (!elements.shareable()) {
      send(peer, step, off, n);
      return;
    }
    SharedRange range = spareCount > 0 ? spare[--spareCount].reset(elements, off, n, Thread.currentThread())
        : new SharedRange(elements, off, n, Thread.currentThread());
    Frame f = transport.acquire(0);
    try {
      stamp(f, step, off);
      f.share(range);
    } catch (RuntimeException e) {
      transport.release(f);
      throw e;
    }
    if (offeredCount == offered.length) {
      offered = java.util.Arrays.copyOf(offered, offeredCount * 2);
    }
    offered[offeredCount++] = range;
    transport.send(peer, f);
  }

  @Override
  public void awaitShared() {
    for (int i = 0; i < offeredCount; i++) {
      SharedRange range = offered[i];
      while (!range.isDone()) {
        CollectiveException failed = transport.failure();
        if (failed != null) {
          throw failed;
        }
        checkCancelled(-1, -1);
        long left = deadlineNanos - transport.nanoTime();
        if (left <= 0) {
          throw new CollectiveTimeoutException(-1, "rank " + rank + " timed out after " + timeoutMs + " ms in "
              + describeCall() + " #" + seq + " on tag " + tag + ", waiting for a rank of its process to read "
              + "the range it handed over");
        }
        java.util.concurrent.locks.LockSupport.parkNanos(this, Math.min(left, Tuning.SHARED_RANGE_PARK_NANOS));
      }
    }
    // Every range was read: keep the objects for the next offers (ranges withdrawn after a failure are not).
    if (spare.length < offeredCount + spareCount) {
      spare = java.util.Arrays.copyOf(spare, offeredCount + spareCount);
    }
    for (int i = 0; i < offeredCount; i++) {
      spare[spareCount++] = offered[i].forget();
    }
    java.util.Arrays.fill(offered, 0, offeredCount, null);
    offeredCount = 0;
  }

  @Override
  public void recvReduce(int peer, int step, int off, int n) {
    receive(peer, step, off, n, true, false);
  }

  @Override
  public void recvReduceFinal(int peer, int step, int off, int n) {
    receive(peer, step, off, n, true, true);
  }

  @Override
  public void recvCopy(int peer, int step, int off, int n) {
    receive(peer, step, off, n, false, false);
  }

  /**
   * Passes a received segment on as it came (restamped), without copying the range out of the vector again,
   * when it is an ordinary frame (not memory a transport lent, not a range of another rank's vector) and the
   * vector's moves to and from the wire are exact inverses ({@link Elements#forwardsVerbatim}).
   */
  @Override
  public void recvCopySend(int peer, int step, int off, int n, int to, int nextStep) {
    if (n > segmentElements || !elements.forwardsVerbatim()) {
      Links.super.recvCopySend(peer, step, off, n, to, nextStep);
      return;
    }
    offerOnDemand(peer, step, off, n);
    Frame f = awaitFrame(peer, step);
    if (f.lender() instanceof PostedReceive) {
      // The payload is in the vector already: check it, then send the range from there.
      try {
        check(f, peer, step, off, n);
      } finally {
        transport.release(f);
      }
      send(to, nextStep, off, n);
      return;
    }
    if (f.shared() != null || f.lender() != null) {
      // Read in place (a range of a rank of this process, or a shared-memory ring's): copy it, then send.
      try {
        if (f.shared() != null) {
          receiveShared(f, peer, step, off, n, false);
        } else {
          check(f, peer, step, off, n);
          elements.read(off, n, f.payload());
        }
      } finally {
        transport.release(f);
      }
      send(to, nextStep, off, n);
      return;
    }
    try {
      check(f, peer, step, off, n);
      elements.read(off, n, f.payload());
      stamp(f, nextStep, off);
    } catch (RuntimeException e) {
      transport.release(f);
      throw e;
    }
    transport.send(to, f);
  }

  /**
   * {@code last}: the sums are final (rounded in the same pass on a narrower wire). A range read in place from a
   * rank of this process is left to the later roundings: it may be rounded only where no other rank reads it.
   */
  private void receive(int peer, int step, int off, int n, boolean reduce, boolean last) {
    if (!reduce) {
      offerOnDemand(peer, step, off, n);
    }
    int segments = segmentsOf(n);
    for (int k = 0; k < segments; k++) {
      int so = off + k * segmentElements;
      int sn = Math.min(segmentElements, n - k * segmentElements);
      Frame f = awaitFrame(peer, step);
      if (f.shared() != null) {
        // The whole range, by reference, from a rank of this process.
        try {
          receiveShared(f, peer, step, off, n, reduce);
        } finally {
          transport.release(f);
        }
        return;
      }
      try {
        check(f, peer, step, so, sn);
        if (f.lender() instanceof PostedReceive) {
          if (reduce) {
            // The vector's values there are gone: only an algorithm announcing the wrong copies gets here.
            throw new IllegalStateException("rank " + rank + " in " + describeCall() + " #" + seq + ": the segment at "
                + so + " from " + transport.describe(peer) + " at step " + step + " was to be combined, but was read "
                + "into the vector as a copy announced for it");
          }
          // Read from the socket straight into the vector, where this op offered it (see expectCopy).
          continue;
        }
        if (last) {
          elements.reduceFinal(so, sn, f.payload(), op, scratch);
        } else if (reduce) {
          elements.reduce(so, sn, f.payload(), op, scratch);
        } else {
          elements.read(so, sn, f.payload());
        }
      } finally {
        transport.release(f);
      }
    }
  }

  /**
   * The segments of {@code [off, off+n)} from {@code peer} at {@code step} are to be copied into the vector: when
   * the vector lies in direct memory in the wire's form (and the range is large enough for it to pay), the range
   * is offered to the transport, one offer per segment chained after this op's earlier offers for that peer, so
   * that payloads arriving from now on are read from the socket straight into it. Offers last until the op ends.
   */
  @Override
  public void expectCopy(int peer, int step, int off, int n) {
    if (announced == null) {
      announced = new boolean[size];
      announcedPeers = new int[Math.min(size, 4)];
    }
    if (!announced[peer]) {
      announced[peer] = true;
      if (announcedCount == announcedPeers.length) {
        announcedPeers = java.util.Arrays.copyOf(announcedPeers, announcedCount * 2);
      }
      announcedPeers[announcedCount++] = peer;
    }
    offer(peer, step, off, n);
  }

  /** Offers {@code [off, off+n)} for the payloads from {@code peer} at {@code step} (see {@link #expectCopy}). */
  private void offer(int peer, int step, int off, int n) {
    if ((long) n * elements.wireElementBytes() < Tuning.POSTED_RECEIVE_MIN_BYTES) {
      return;
    }
    java.nio.ByteBuffer range = elements.wireRange(off, Math.min(n, segmentElements));
    if (range == null) {
      return;
    }
    PostedReceive first = new PostedReceive(peer, stream, seq, step, off, signature(), range);
    PostedReceive last = first;
    for (int done = segmentElements; done < n; done += segmentElements) {
      last = last.then(new PostedReceive(peer, stream, seq, step, off + done, signature(),
          elements.wireRange(off + done, Math.min(segmentElements, n - done))));
    }
    if (offersFirst == null) {
      offersFirst = new PostedReceive[size];
      offersLast = new PostedReceive[size];
      offerPeers = new int[Math.min(size, 4)];
    }
    if (offersFirst[peer] != null) {
      offersLast[peer].then(first);
      offersLast[peer] = last;
      return;
    }
    if (!transport.post(first)) {
      return;
    }
    offersFirst[peer] = first;
    offersLast[peer] = last;
    if (offerCount == offerPeers.length) {
      offerPeers = java.util.Arrays.copyOf(offerPeers, offerCount * 2);
    }
    offerPeers[offerCount++] = peer;
  }

  /**
   * A copy about to be waited for: offered now, unless the algorithm announced this op's copies from that peer
   * ({@link #expectCopy}; then this one was offered already).
   */
  private void offerOnDemand(int peer, int step, int off, int n) {
    if (announced == null || !announced[peer]) {
      offer(peer, step, off, n);
    }
  }

  /** Withdraws every offer of the op (see {@link #expectCopy}): nothing writes into the vector afterwards. */
  private void withdrawOffers() {
    for (int i = 0; i < offerCount; i++) {
      int peer = offerPeers[i];
      PostedReceive first = offersFirst[peer];
      offersFirst[peer] = null;
      offersLast[peer] = null;
      transport.unpost(first);
    }
    offerCount = 0;
    for (int i = 0; i < announcedCount; i++) {
      announced[announcedPeers[i]] = false;
    }
    announcedCount = 0;
  }

  private void receiveShared(Frame f, int peer, int step, int off, int n, boolean reduce) {
    SharedRange range = (SharedRange) f.shared();
    checkCall(f, peer);
    if (f.step() != step || range.offset != off || range.count != n || !elements.sharesWith(range.elements)) {
      throw new CollectiveMismatchException("rank " + rank + " in " + describeCall() + " #" + seq + " on tag " + tag
          + " expected step " + step + " offset " + off + " (" + n + " elements) from " + transport.describe(peer)
          + " but was offered offset " + range.offset + " (" + range.count + " elements) at step " + f.step());
    }
    if (!range.take()) {
      CollectiveException failed = transport.failure();
      throw failed != null ? failed : new CollectiveException("rank " + rank + ": " + transport.describe(peer)
          + " withdrew the range it handed over in " + describeCall() + " #" + seq + " (its operation failed)");
    }
    try {
      if (reduce) {
        elements.reduceFrom(range.elements, off, n, op, scratch);
      } else {
        elements.copyFrom(range.elements, off, n);
      }
    } finally {
      range.done();
    }
  }

  /**
   * Waits for the next frame from {@code peer} in slices; between slices, looks for frames of this operation
   * from other ranks that reveal a disagreement (a peer that never sends because it thinks it is not the
   * one to, e.g. a different broadcast root), so that fails fast instead of at the deadline.
   */
  private Frame awaitFrame(int peer, int step) {
    while (true) {
      long now = transport.nanoTime();
      long sliceEnd = Math.min(deadlineNanos, now + DISAGREEMENT_CHECK_NANOS);
      Frame f;
      try {
        f = transport.receive(peer, stream, seq, sliceEnd);
      } catch (CollectiveCancelledException e) {
        checkCancelled(step, peer); // the same, saying where this operation was
        throw e;
      }
      if (f != null) {
        return f;
      }
      checkCancelled(step, peer);
      String other = transport.findDisagreement(stream, seq, peer, signature());
      if (other != null) {
        int colon = other.indexOf(": ");
        throw new CollectiveMismatchException("ranks disagree on " + other.substring(0, colon) + " of operation #"
            + seq + " on tag " + tag + ": rank " + rank + " called " + describeCall() + " but "
            + other.substring(colon + 2) + " (rank " + rank + " was waiting for " + transport.describe(peer)
            + " at step " + step + ")");
      }
      if (sliceEnd >= deadlineNanos) {
        throw timeout(peer, step);
      }
    }
  }

  /**
   * Throws if this rank's caller was cancelled while the operation waited at {@code step} for {@code peer}
   * (-1: for ranks of its process to read the range it handed over).
   */
  private void checkCancelled(int step, int peer) {
    String why = Cancellation.check(cancellation);
    if (why != null) {
      String where = peer < 0 ? "waiting for a rank of its process to read the range it handed over"
          : "at step " + step + ", waiting for " + transport.describe(peer);
      throw new CollectiveCancelledException("rank " + rank + " left " + describeCall() + " #" + seq + " on tag "
          + tag + " " + where + ": " + why);
    }
  }

  /** This operation's call as frames must show it (made once per operation, on first need). */
  private CallSignature signature() {
    if (signature == null) {
      signature = new CallSignature(kind.wireCode(), elements.length(), elements.wireCode(), opCode, root,
          algorithmCode);
    }
    return signature;
  }

  @Override
  public void stash(int off, int n) {
    if (n > segmentElements) {
      throw new IllegalArgumentException("stash of " + n + " elements exceeds one segment");
    }
    if (stash == null) {
      stash = transport.acquire(segmentElements * elements.wireElementBytes());
    }
    elements.write(off, n, stash.payload());
  }

  @Override
  public void copyFromStash(int off, int n) {
    elements.read(off, n, stash.payload());
  }

  @Override
  public void reduceFromStash(int off, int n) {
    elements.reduce(off, n, stash.payload(), op, scratch);
  }

  @Override
  public void reduceFromStashFinal(int off, int n) {
    elements.reduceFinal(off, n, stash.payload(), op, scratch);
  }

  @Override
  public void roundToWire(int off, int n) {
    elements.roundToWire(off, n);
  }

  @Override
  public void roundToWireOnMove(int off, int n) {
    elements.roundToWireOnMove(off, n);
  }

  @Override
  public void settleWire(int off, int n) {
    elements.settleWire(off, n);
  }

  /** Copies {@code [0, n)} of {@code from} into {@code [dstOff, dstOff+n)} of this operation's vector. */
  void copyLocal(Elements from, int dstOff) {
    int n = from.length();
    Frame f = transport.acquire(Math.max(1, Math.min(n, segmentElements)) * from.wireElementBytes());
    try {
      for (int done = 0; done < n; done += segmentElements) {
        int cnt = Math.min(segmentElements, n - done);
        from.write(done, cnt, f.payload());
        elements.read(dstOff + done, cnt, f.payload());
      }
    } finally {
      transport.release(f);
    }
  }

  private void stamp(Frame f, int step, int offset) {
    f.header(kind.wireCode(), stream, seq, step, rank, elements.wireCode(), opCode, root, algorithmCode,
        elements.length(), offset);
  }

  /** Verifies that {@code f} belongs to the call this rank made; a difference means the ranks disagree. */
  private void checkCall(Frame f, int peer) {
    String differs = signature().difference(f);
    if (differs != null) {
      throw new CollectiveMismatchException("ranks disagree on " + differs + " of operation #" + seq + " on tag "
          + tag + ": rank " + rank + " called " + describeCall() + " but " + transport.describe(peer)
          + " called " + f.describeCall());
    }
  }

  /** Verifies that {@code f} is the segment this rank expects; a difference means the ranks disagree. */
  private void check(Frame f, int peer, int step, int offset, int n) {
    checkCall(f, peer);
    if (f.step() != step || f.offset() != offset || f.payload().size() != n * elements.wireElementBytes()) {
      throw new CollectiveMismatchException("rank " + rank + " in " + describeCall() + " #" + seq + " on tag " + tag
          + " expected step " + step + " offset " + offset + " (" + n + " elements) from "
          + transport.describe(peer) + " but received " + f);
    }
  }

  private CollectiveException timeout(int peer, int step) {
    return new CollectiveTimeoutException(peer, "rank " + rank + " timed out after " + timeoutMs + " ms in "
        + describeCall() + " #" + seq + " on tag " + tag + " at step " + step + ", waiting for "
        + transport.describe(peer) + " (did it call the same operations in the same order?)");
  }

  private String describeCall() {
    return Frame.describeCall(kind.wireCode(), elements.length(), elements.wireCode(), opCode, root, algorithmCode);
  }
}
