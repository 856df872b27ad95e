package io.sparkcollective.core.transport.tcp.shm;

/**
 * The layout of a shared-memory ring file and the arithmetic of where payloads go in it, in one place (pure
 * functions, so both sides and the tests agree by construction). Offsets count from the start of the file;
 * words are 64-bit in the host's byte order (both sides share the host).
 *
 * <pre>
 *   0       8       16         24         32   64          72      80    128        136      144         152  192
 *   +-------+-------+----------+----------+pad-+-----------+-------+pad-+----------+--------+-----------+pad-+------+
 *   | magic | token | capacity | attached |    | published | start |    | consumed | parked | socket    |    | data |
 *   |       |       |          |          |    |           | over  |    |          |        | DATA read |    |      |
 *   +-------+-------+----------+----------+----+-----------+-------+----+----------+--------+-----------+----+------+
 *    written by the sender at creation;         the sender's line: end   the receiver's line: end of what it
 *    checked by the receiver; attached by       of the records published holds; blocked in a poll (1); DATA
 *    the receiver                               and where they last      messages it read from the socket
 *                                               started over
 * </pre>
 *
 * <p>Placement: the sender's head counts bytes ever reserved. A payload starts at the head aligned to 8;
 * one that would cross the end of the data area starts at the next multiple of the capacity instead, and the
 * skipped tail counts as used. One sent while the ring is empty, or while what the receiver holds lies in the
 * second half of the data area, starts over at its beginning ({@link #startOver}), so that the ring's working
 * set is what is in flight, which the caches hold, rather than all of its capacity, which they may not (a 1 MiB
 * all-reduce between two processes through a 16 MiB ring: 190-250 us when every payload went to memory the
 * caches had long dropped, 105-120 us in the same sitting through a 4 MiB ring). The receiver expects exactly
 * one of those two positions next, so a payload anywhere else is refused. Free space is
 * {@code capacity - (head - consumed)}, where a consumed word that still stands where the sender last started
 * over counts as at the beginning (the tail it skipped holds nothing, see below).
 *
 * <p>Records: a connection may send whole messages through the ring instead of only payloads. Each record
 * is a little-endian int32 length followed by that many bytes, placed like a payload (the length counts in
 * its size); a length of {@link #WRAP_MARK} where the next record would start says that it starts at the
 * next wrap instead (that mark lies in the skipped tail, which stays used until the receiver is past it). A
 * record that starts over leaves no mark in the data area: the sender writes its head (where the receiver's
 * next record would start) to {@code start over} before publishing the record, and a receiver whose next record
 * would start there goes to the next wrap. (The sender starts over again only after the receiver has freed
 * something past that wrap, so the receiver has read the word before it changes.) The sender publishes the
 * end of the last record it wrote ({@code published}, released after the record's bytes); the receiver reads
 * records up to there. Before it blocks, the receiver sets
 * {@code parked}; a sender that publishes while it is set clears it and rings the receiver through the
 * socket (one wake-up per block). DATA that does not fit in the ring goes over the socket; the receiver counts
 * the DATA messages it has read from the socket, and the sender puts DATA into the ring again only once that
 * count has reached the number it sent there, so the DATA of a connection arrives in the order it was sent.
 */
public final class RingLayout {
  /** Bytes of one cache line: the receiver's word gets one of its own, away from the sender's. */
  private static final int CACHE_LINE = 64;
  public static final int MAGIC_AT = 0;
  public static final int TOKEN_AT = MAGIC_AT + Long.BYTES;
  public static final int CAPACITY_AT = TOKEN_AT + Long.BYTES;
  public static final int ATTACHED_AT = CAPACITY_AT + Long.BYTES;
  public static final int PUBLISHED_AT = CACHE_LINE;
  public static final int STARTED_OVER_AT = PUBLISHED_AT + Long.BYTES;
  public static final int CONSUMED_AT = PUBLISHED_AT + CACHE_LINE;
  public static final int PARKED_AT = CONSUMED_AT + Long.BYTES;
  public static final int SOCKET_DATA_AT = PARKED_AT + Long.BYTES;
  public static final int DATA_AT = CONSUMED_AT + CACHE_LINE;
  /** "scshmrn3": the first word of every ring file of this layout. */
  public static final long MAGIC = 0x7363_7368_6d72_6e33L;
  /** Bytes of a record's length field. */
  public static final int RECORD_LENGTH_BYTES = Integer.BYTES;
  /** A record length that means "the next record starts at the next wrap". */
  public static final int WRAP_MARK = 0;
  /** Payloads start at multiples of this, so every element type can be read where it lies. */
  public static final int ALIGNMENT = 8;
  /** Smallest ring: one largest control-free payload of a few pages at least. */
  public static final int MIN_CAPACITY = 4096;
  /** Largest ring (the data area is addressed by int offsets in one mapping). */
  public static final int MAX_CAPACITY = 1 << 30;

  private RingLayout() {}

  /** Why {@code capacity} cannot be a ring's, or null if it can: a multiple of 8 from 4 KiB to 1 GiB. */
  public static String checkCapacity(long capacity) {
    if (capacity < MIN_CAPACITY || capacity > MAX_CAPACITY || capacity % ALIGNMENT != 0) {
      return "a ring's capacity must be a multiple of " + ALIGNMENT + " from " + MIN_CAPACITY + " to "
          + MAX_CAPACITY + " bytes, not " + capacity;
    }
    return null;
  }

  /** Size of the file of a ring of {@code capacity} bytes. */
  public static long fileBytes(int capacity) {
    return (long) DATA_AT + capacity;
  }

  public static long align(long pos) {
    return (pos + ALIGNMENT - 1) & -ALIGNMENT;
  }

  /**
   * Whether the next payload of {@code n} bytes after {@code head} starts over at the beginning of the data
   * area (the next wrap) while the receiver holds everything from {@code consumed} on: when the ring is empty,
   * or when what the receiver holds starts in the second half of the data area and the payload fits before it
   * (so the ring's working set stays near what is in flight even when it is never quite empty, as in a long
   * all-reduce).
   */
  public static boolean startOver(long head, int n, long consumed, int capacity) {
    long at = align(head);
    if (at % capacity == 0) {
      return false;
    }
    return consumed >= head
        || (consumed % capacity >= capacity / 2 && fits(nextWrap(at, capacity), n, consumed, capacity));
  }

  /**
   * Where the next payload of {@code n} bytes goes after {@code head} (bytes ever reserved): aligned, and moved
   * to the next wrap if it would cross the end of the data area or if it starts {@code over}.
   */
  public static long place(long head, int n, int capacity, boolean over) {
    long pos = align(head);
    return over || pos % capacity + n > capacity ? nextWrap(pos, capacity) : pos;
  }

  /** The first multiple of {@code capacity} at or after {@code pos}. */
  public static long nextWrap(long pos, int capacity) {
    return pos % capacity == 0 ? pos : pos + capacity - pos % capacity;
  }

  /**
   * Why a payload of {@code n} bytes at {@code pos} cannot be the one that follows a payload ending at
   * {@code end}, in a ring of {@code capacity} bytes; null if it can be.
   */
  public static String checkNext(long end, long pos, int n, int capacity) {
    long next = align(end);
    long wrapped = nextWrap(next, capacity);
    if (n < 0 || n > capacity || (pos != next && pos != wrapped) || pos % capacity + n > capacity) {
      return "its shared-memory payload of " + n + " bytes at " + pos + " is out of sequence (next at " + next
          + ", ring of " + capacity + " bytes)";
    }
    return null;
  }

  /**
   * Why {@code published}, read from the sender's word, cannot follow {@code seen} (the last value read) while
   * the receiver holds everything from {@code consumed} on; null if it can.
   */
  public static String checkPublished(long seen, long published, long consumed, int capacity) {
    if (published < seen || published - consumed > capacity) {
      return "its shared-memory ring says records end at " + published + " (before: " + seen + ", receiver holds from "
          + consumed + ", ring of " + capacity + " bytes)";
    }
    return null;
  }

  /**
   * Why a record of {@code length} (its length field) cannot start at {@code pos}, aligned, with records
   * published up to {@code published}; null if it can. A {@link #WRAP_MARK} must not be at a wrap itself.
   */
  public static String checkRecord(long pos, int length, long published, int capacity) {
    long end = length == WRAP_MARK ? pos + capacity - pos % capacity : pos + RECORD_LENGTH_BYTES + (long) length;
    if (length < 0 || (length == WRAP_MARK && pos % capacity == 0) || end > published
        || (length != WRAP_MARK && pos % capacity + RECORD_LENGTH_BYTES + (long) length > capacity)) {
      return "its shared-memory record of length " + length + " at " + pos + " does not fit (records end at "
          + published + ", ring of " + capacity + " bytes)";
    }
    return null;
  }

  /** Whether {@code n} bytes at {@code pos} fit while the receiver holds everything from {@code consumed} on. */
  public static boolean fits(long pos, int n, long consumed, int capacity) {
    return pos + n - consumed <= capacity;
  }
}
