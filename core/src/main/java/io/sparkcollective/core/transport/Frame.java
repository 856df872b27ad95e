package io.sparkcollective.core.transport;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveKind;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.kernel.WireBuffer;

/**
 * One segment of one collective operation: a header that names the operation and where the segment
 * belongs, and a pooled payload. Frames come from a {@link FramePool}; exactly one party owns a frame at a
 * time: the sender until {@link Transport#send}, the transport until {@link Transport#receive} hands it
 * out, then the receiver, who must {@link Transport#release} it (in a {@code finally}).
 *
 * <p>The header fields say what the sender called, so a receiver can tell a peer that called something
 * else (another kind, count, dtype, op or root) from a late or lost segment.
 */
public final class Frame {
  private final WireBuffer payload;
  private final int sizeClass;
  private int kind;
  private int stream;
  private long seq;
  private int step;
  private int source;
  private int dtype;
  private int op;
  private int root;
  private int algorithm;
  private long count;
  private long offset;

  private Attachment attachment;
  /** A range of the sender's memory this frame stands for (same-process hand-over), else null. */
  private SharedRegion shared;
  /** Payload held in memory the transport lends (see {@link #lend}), else null. */
  private WireBuffer lent;
  private Lender lender;
  private long loan;

  /**
   * A range of a sending rank's own memory that a frame stands for instead of carrying it, for a rank of the
   * same process to read in place (the engine's business: transports only pass it along, and refuse to send
   * it over a network).
   */
  public interface SharedRegion {}

  /** What a transport keeps with a frame across its uses (e.g. the frame's wrapper for a network library). */
  public interface Attachment {}

  /** Memory a transport lends a received frame its payload in, returned when the frame is released. */
  public interface Lender {
    /** The frame holding {@code buffer} (loan number {@code loan}) was released. */
    void giveBack(long loan, WireBuffer buffer);
  }

  Frame(int capacity, int sizeClass, int headroom, int tailroom) {
    this.payload = new WireBuffer(capacity, true, headroom, tailroom);
    this.sizeClass = sizeClass;
  }

  /**
   * Makes {@code buffer} (memory of {@code lender}, e.g. a shared-memory ring) this frame's payload until the
   * frame is released, so a received payload is read where it arrived instead of being copied in first.
   */
  public void lend(WireBuffer buffer, Lender lender, long loan) {
    this.lent = buffer;
    this.lender = lender;
    this.loan = loan;
  }

  /** Who lent this frame its payload memory (see {@link #lend}), or null. */
  public Lender lender() {
    return lender;
  }

  /** Returns lent memory to its lender (on release). */
  void giveBack() {
    if (lender != null) {
      Lender l = lender;
      WireBuffer b = lent;
      lender = null;
      lent = null;
      l.giveBack(loan, b);
    }
  }

  /**
   * The sender's memory this frame refers to instead of carrying a payload (ranks of one process only), or
   * null for an ordinary frame.
   */
  public SharedRegion shared() {
    return shared;
  }

  public void share(SharedRegion region) {
    this.shared = region;
  }

  /** What a transport keeps with this frame across uses, or null. */
  public Attachment attachment() {
    return attachment;
  }

  public void attach(Attachment attachment) {
    this.attachment = attachment;
  }

  /** Fills the header; the payload is written separately. */
  public Frame header(int kind, int stream, long seq, int step, int source, int dtype, int op, int root,
      int algorithm, long count, long offset) {
    this.kind = kind;
    this.stream = stream;
    this.seq = seq;
    this.step = step;
    this.source = source;
    this.dtype = dtype;
    this.op = op;
    this.root = root;
    this.algorithm = algorithm;
    this.count = count;
    this.offset = offset;
    return this;
  }

  public WireBuffer payload() {
    if (lent != null) {
      return lent;
    }
    return payload;
  }

  int sizeClass() {
    return sizeClass;
  }

  /** {@link CollectiveKind} wire code. */
  public int kind() {
    return kind;
  }

  /** Ordered stream: the tag for collectives, {@code MAX_TAGS + tag} for point-to-point. */
  public int stream() {
    return stream;
  }

  /** Operation sequence number within the stream. */
  public long seq() {
    return seq;
  }

  /** Algorithm step. */
  public int step() {
    return step;
  }

  /** Sending rank. */
  public int source() {
    return source;
  }

  /** {@link DType} wire code of the sender's buffer. */
  public int dtype() {
    return dtype;
  }

  /** {@link ReduceOp} wire code, or {@link ReduceOp#NONE_WIRE_CODE}. */
  public int op() {
    return op;
  }

  /** Root rank for rooted operations, else -1. */
  public int root() {
    return root;
  }

  /** Algorithm code (ordinal of {@code api.Algorithm}) for all-reduce, else 0. */
  public int algorithm() {
    return algorithm;
  }

  /** Elements of the whole vector as the sender sees it. */
  public long count() {
    return count;
  }

  /** First element of this segment within the vector. */
  public long offset() {
    return offset;
  }

  /** The call this frame belongs to, for error messages: e.g. {@code allReduce(count=10, F32, SUM)}. */
  public String describeCall() {
    return describeCall(kind, count, dtype, op, root, algorithm);
  }

  /** How a call with these header values is named in error messages. */
  public static String describeCall(int kind, long count, int dtype, int op, int root, int algorithm) {
    StringBuilder sb = new StringBuilder(CollectiveKind.nameOfWireCode(kind)).append("(count=").append(count);
    sb.append(", ").append(DType.nameOfWireCode(dtype));
    if (op != ReduceOp.NONE_WIRE_CODE) {
      sb.append(", ").append(ReduceOp.nameOfWireCode(op));
    }
    if (root >= 0) {
      sb.append(", root=").append(root);
    }
    if (algorithm > 0) {
      sb.append(", ").append(Algorithm.nameOfWireCode(algorithm));
    }
    return sb.append(')').toString();
  }

  @Override
  public String toString() {
    return describeCall() + " #" + seq + " stream " + stream + " step " + step + " from rank " + source
        + " offset " + offset + " bytes " + payload.size();
  }
}
