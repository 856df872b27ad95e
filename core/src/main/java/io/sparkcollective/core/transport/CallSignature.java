package io.sparkcollective.core.transport;

/**
 * What a rank called, as frame headers carry it: operation kind, vector length, dtype, reduction, root and
 * algorithm. Two ranks in the same operation must have equal signatures.
 */
public final class CallSignature {
  private final int kind;
  private final long count;
  private final int dtype;
  private final int op;
  private final int root;
  private final int algorithm;

  public CallSignature(int kind, long count, int dtype, int op, int root, int algorithm) {
    this.kind = kind;
    this.count = count;
    this.dtype = dtype;
    this.op = op;
    this.root = root;
    this.algorithm = algorithm;
  }

  /** True if {@code f} belongs to the same call. */
  public boolean matches(Frame f) {
    return difference(f) == null;
  }

  /** What differs between this call and {@code f}'s ("the root", "the length", ...), or null. */
  public String difference(Frame f) {
    if (f.kind() != kind) {
      return "the operation";
    } else if (f.count() != count) {
      return "the length";
    } else if (f.dtype() != dtype) {
      return "the element type";
    } else if (f.op() != op) {
      return "the reduction";
    } else if (f.root() != root) {
      return "the root";
    } else if (f.algorithm() != algorithm) {
      return "the algorithm";
    }
    return null;
  }

  /** E.g. {@code broadcast(count=10, F32, root=1)}. */
  public String describe() {
    return Frame.describeCall(kind, count, dtype, op, root, algorithm);
  }
}
