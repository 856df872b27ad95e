package io.sparkcollective.core.api;

/** The operations a {@link Communicator} offers, as named in frames and error messages. */
public enum CollectiveKind {
  ALL_REDUCE(1, "allReduce"),
  REDUCE_SCATTER(2, "reduceScatter"),
  ALL_GATHER(3, "allGather"),
  BROADCAST(4, "broadcast"),
  BARRIER(5, "barrier"),
  SEND_RECV(6, "send/recv"),
  ALL_GATHER_OBJECTS(7, "allGatherObjects"),
  BROADCAST_OBJECT(8, "broadcastObject"),
  /** The group's own round trips before its first all-reduce, when AUTO measures the link (no call of users). */
  LINK_PROBE(9, "link measurement");

  private static final CollectiveKind[] BY_CODE = new CollectiveKind[10];

  static {
    for (CollectiveKind k : values()) {
      BY_CODE[k.wireCode] = k;
    }
  }

  private final int wireCode;
  private final String displayName;

  CollectiveKind(int wireCode, String displayName) {
    this.wireCode = wireCode;
    this.displayName = displayName;
  }

  public int wireCode() {
    return wireCode;
  }

  /** The method name users know, e.g. {@code allReduce}. */
  public String displayName() {
    return displayName;
  }

  /** Kind of a wire code, or null when the code is unknown. */
  public static CollectiveKind ofWireCode(int code) {
    return code > 0 && code < BY_CODE.length ? BY_CODE[code] : null;
  }

  /** The display name of a wire code, for error messages. */
  public static String nameOfWireCode(int code) {
    CollectiveKind k = ofWireCode(code);
    return k == null ? "kind#" + code : k.displayName;
  }
}
