package io.sparkcollective.core.config;

import java.util.concurrent.TimeUnit;

/**
 * Every internal tuning constant of the engine and its transports, each with why it has its value (the
 * settings a user may change are in {@link CollectiveConfig}). One place to read and change them, like NCCL's
 * tuning table; measure with the benchmarks before changing any.
 */
public final class Tuning {
  private Tuning() {}

  // ------------------------------------------------------------------------------------------ algorithms

  /**
   * Most segments of one rank's chunk in one pass of the ring all-reduce. A rank sends its first chunk at once
   * and forwards the chunk it finishes while its neighbour is still reducing, so about two chunks per rank are
   * in flight on each link; longer vectors run as several passes over pieces of N chunks of this size, which
   * keeps what is in flight within a few MiB (what a shared-memory ring holds; pooled frames otherwise) instead
   * of growing with the vector. 8 x 256 KiB segments: 2 MiB per chunk.
   */
  public static final int RING_CHUNK_SEGMENTS = 8;

  /**
   * Most segments per rank in one piece of a block of the hierarchical all-reduce: small enough that each of
   * its three phases reads what the one before just wrote while it is still in the cache (a few MiB per
   * process), the same as the ring's pass so that the ring across processes runs one pass per piece.
   */
  public static final int HIERARCHICAL_PIECE_SEGMENTS = 8;

  /**
   * Vectors up to this many elements that do not fold received values from the wire buffer (integer vectors,
   * bfloat16 sums without the Vector API module, JVMs without off-heap kernels) are reduced in place through an
   * array indexed like the vector (which C2 vectorises); longer ones keep segment-sized staging, so 50 M
   * parameters need no second copy of the vector in a 1 GiB executor. 32 Mi elements: 128 MiB of floats.
   */
  public static final int ALIGNED_MAX_ELEMENTS = 1 << 25;

  /*
   * What AUTO's cost model (algorithm.AllReduceCostModel, used once algorithm.linkMbps is set) assumes of a
   * rank's CPU, and what the simulator's NetworkModel.of takes by default: the same numbers, so that the model
   * is judged on the network it was written for. A core of today's servers; on this project's 2-core machine
   * KernelBenchmark measures the segment path (copy out of the wire buffer, then reduce) at about 32 GB/s per
   * core at 1 Mi floats, the socket and frame bookkeeping at a few microseconds per message.
   */

  /** CPU time per message on each side (frame, header, system call share), in seconds. */
  public static final double MODEL_MESSAGE_OVERHEAD_SECONDS = 1e-6;

  /** Bytes per second a rank combines into its vector. */
  public static final double MODEL_REDUCE_BYTES_PER_SECOND = 8e9;

  /** Bytes per second a rank copies (into a frame, out of one). */
  public static final double MODEL_COPY_BYTES_PER_SECOND = 16e9;

  /** Latency between two ranks of one host, in seconds. */
  public static final double MODEL_LOCAL_LATENCY_SECONDS = 1e-6;

  /** Bytes of headers per message on the wire: the frame's and TCP/IP's. */
  public static final int MODEL_HEADER_BYTES = 64;

  /**
   * With the link unknown (algorithm.linkMbps 0), AUTO keeps to its configured table for groups of at most this
   * many processes on one host, the placements it was measured on (2-4 processes over sockets on two shared cores,
   * where a message costs several microseconds of CPU: the table's RECURSIVE_DOUBLING for small messages beats
   * DIRECT there). Larger groups, and groups across hosts, follow the cost model on the link they measure
   * (LinkProbe) or an assumed one ({@link #ASSUMED_LINK_MBPS}, {@link #ASSUMED_STEP_MICROS}): the table cannot
   * follow the group size, nor the link (on the simulated grid its small messages in groups of 2-4 hosts took up
   * to 2.2x the best).
   */
  public static final int TABLE_MAX_PROCESSES = 4;

  /**
   * The link AUTO's cost model assumes for groups past {@link #TABLE_MAX_PROCESSES} when it is neither told one nor
   * measures it ({@code algorithm.measureLink=false}): 10 Gbit/s each way. Over the simulated grid of
   * benchmarks/README.md "Scale on a simulated network" (1-100 Gbit/s, 2-1024 ranks) it leaves AUTO more than 10%
   * off the best at 374 of 1860 points (worst 4.2x) where the table alone was at 631 (worst 69x); assuming 1 Gbit/s
   * instead 561 (13.9x), 25 Gbit/s 349 (9.1x), 100 Gbit/s 368 (10.5x). Told the link, AUTO is within 10% at every
   * point.
   */
  public static final long ASSUMED_LINK_MBPS = 10_000;

  /** The latency of a message between hosts that goes with {@link #ASSUMED_LINK_MBPS}, in microseconds. */
  public static final long ASSUMED_STEP_MICROS = 10;

  /**
   * How much slower than a faster predicted HALVING_DOUBLING RING may be and still be taken: within that, the
   * ring's steady stream beats a halving-doubling step's drain of the link's queues (the model has no queues:
   * on 4 hosts at 1 Gbit/s with 20 ms of queue, 4 MiB took 66.6 ms with HALVING_DOUBLING and 55.5 with RING).
   */
  public static final double MODEL_RING_PREFERENCE = 1.05;

  // ------------------------------------------------------------------------------------------ waiting

  /**
   * How often a receive that waits looks for frames of the same operation from other ranks that show the
   * ranks disagree (a peer that never sends because it thinks it is not the one to): often enough that a
   * mismatch fails in tens of milliseconds, rarely enough to cost nothing. Also the longest wait between two
   * checks of the caller's cancellation.
   */
  public static final long DISAGREEMENT_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  /** Longest park while a rank waits for ranks of its process to read a range it handed over. */
  public static final long SHARED_RANGE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  /**
   * Longest park of a thread waiting in an inbox (its frame, a failure or a departure unparks it at once): the
   * bound on noticing anything that does not unpark it, such as an interrupt seen only at the next look.
   */
  public static final long INBOX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /**
   * Longest single block of a caller-driven socket poll; the loop re-checks deadlines, failures and
   * cancellation in between. 10 ms: a poll is woken by frames and failures anyway.
   */
  public static final long POLL_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  /**
   * Polls a waiting thread makes in a tight loop before it starts yielding its core between polls (then,
   * after {@code transport.spinMicros}, blocking): none, since executors share cores with their peers and a
   * peer process needs the core a spinner holds. Raise it on hosts with cores to spare.
   */
  public static final int SPIN_POLLS = 0;

  /**
   * How long after an application thread last drove the sockets the endpoint's progress thread stays out of
   * the way: long enough not to contend for the read token between the operations of a busy loop, short
   * enough that aborts and lost connections of idle groups are still seen within a millisecond.
   */
  public static final long PROGRESS_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /**
   * The same while an application thread is inside an operation on the endpoint: it drives the sockets whenever
   * it waits, so a gap in its driving is its own work (folding, copying) or its core taken by another process,
   * and a progress thread that read meanwhile only handed every frame across threads. With four ranks on two
   * cores, 16 MiB over TCP, the progress thread took a quarter of the machine's CPU at 1 ms; at 50 ms it took
   * none and the all-reduce ran about 9% faster. Still bounded, for a caller held up elsewhere.
   */
  public static final long PROGRESS_BACKOFF_IN_OPERATION_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  // ------------------------------------------------------------------------------------------ TCP

  /**
   * Staging buffer of a caller-driven connection, into which headers and control messages are read (payloads
   * go straight into frames): many small messages per read system call, a control message of up to this size.
   */
  public static final int STAGING_BYTES = 64 << 10;

  /** Reads of one connection per turn of the driving thread, so one busy connection cannot starve the others. */
  public static final int READS_PER_TURN = 16;

  /**
   * Turns of a spinning receiver that read the connection its frame comes through directly, per turn that polls
   * every connection instead.
   */
  public static final int DIRECT_READS_PER_POLL = 8;

  /**
   * With DATA sealed (where only payloads go through a shared-memory ring and their sealed headers over the
   * socket), the smallest payload that goes through the ring; smaller ones go over the socket with their
   * header, where one write costs less than the ring's bookkeeping. Unsealed DATA goes into the ring whole,
   * whatever its size.
   */
  public static final int SHARED_MIN_BYTES = 8 << 10;

  /**
   * Largest operation (its count times the element size of the sender's buffer) whose DATA the two endpoints of
   * a pair send each other over one connection, where the acknowledgements of each side's messages ride on the
   * other side's instead of costing a packet of their own; larger ones go over the sender's own connection, since
   * two directions' bulk transfers on one socket wait for each other's use of it. Loopback, two ranks, against a
   * connection per direction: 4 bytes 6.1 against 6.5 us, 4 KiB 7.5 against 8.1-8.4, 16 KiB even; 64 KiB 31
   * against 28 us, 1 MiB 500 against 300 us and 16 MiB 8.7-9.2 against 8.0-8.4 ms when every size shared it.
   */
  public static final int TWO_WAY_MAX_BYTES = 8 << 10;

  /**
   * Longest gap between two socket polls of a spinning caller while every inbound connection of its endpoint
   * has a shared-memory ring (DATA comes through the rings, which it reads on every turn; the sockets carry
   * only control messages, so a poll, a system call, every turn would only slow the rings down).
   */
  public static final long RING_SELECT_INTERVAL_NANOS = TimeUnit.MICROSECONDS.toNanos(20);

  /**
   * Smallest range of a vector in direct memory that an operation offers for payloads to be read into where they
   * belong (see {@code transport.PostedReceive}); smaller copies cost less than the offer.
   */
  public static final int POSTED_RECEIVE_MIN_BYTES = 64 << 10;

  /** Largest message on the wire: a frame of the largest segment (see CollectiveConfig) plus room for a header. */
  public static final int MAX_MESSAGE_BYTES = CollectiveConfig.MAX_SEGMENT_BYTES + 4096;

  /**
   * Largest message accepted before a connection is authenticated: a HELLO with two endpoint names of 255
   * bytes is about 560 bytes, so an unauthenticated peer can make an endpoint buffer at most this much.
   */
  public static final int HANDSHAKE_MAX_BYTES = 1024;

  /**
   * Connections an endpoint holds open at once before they authenticate: many more than a group's peers
   * dial at once (one per remote endpoint and channel), few enough that a flood of idle sockets cannot use up
   * the process's file descriptors; more are closed at once.
   */
  public static final int MAX_UNAUTHENTICATED_CONNECTIONS = 64;

  /** Warnings about one remote address per interval (refusals, dropped messages); the rest are counted. */
  public static final int WARNINGS_PER_ADDRESS = 5;

  /** The interval of {@link #WARNINGS_PER_ADDRESS}. */
  public static final long WARNING_INTERVAL_MS = 60_000;

  /** Pause before dialling again a peer whose endpoint is not up yet, while joining (ranks start at different
   * times; 50 ms is short next to starting an executor). */
  public static final long JOIN_RETRY_MS = 50;

  /** Longest wait between looks at a join's refusal, failure, cancellation and deadline. */
  public static final long JOIN_CHECK_MS = 10;

  /**
   * JOINs kept at once for ranks not registered yet: far more than the ranks of the groups forming on one
   * endpoint, so an authenticated peer that sends JOINs for groups that never form cannot grow the list
   * without bound (the oldest go first).
   */
  public static final int MAX_PENDING_JOINS = 4096;

  /** How long a JOIN for a rank not registered yet is kept for it (its task may start late). */
  public static final long PENDING_JOIN_TTL_NANOS = TimeUnit.MINUTES.toNanos(2);

  /** Smallest pooled frame: below it, a frame's own bookkeeping outweighs its payload. */
  public static final int MIN_FRAME_BYTES = 256;
}
