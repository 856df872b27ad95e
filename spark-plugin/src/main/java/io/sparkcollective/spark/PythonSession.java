package io.sparkcollective.spark;

import io.sparkcollective.core.api.Blocks;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.api.CollectiveCancelledException;
import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.api.CollectiveMismatchException;
import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.CollectiveTimeoutException;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.PeerLostException;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.api.RemoteFailureException;
import io.sparkcollective.core.transport.tcp.shm.Mappings;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/*
 * One Python worker's connection. Frames both ways: u32 length (little-endian, as everything here), then the
 * body. Requests start with their kind:
 *
 *   HELLO  "SCPY" u16 protocol, token[32], u8 byte order (0 little, 1 big), str version,
 *          i64 task attempt id, i32 stage id, i32 stage attempt, i32 partition id
 *          -> OK i32 rank, i32 size, str version, str group, str segment directory, i64 ms within which
 *          every later request is answered (the worker stops waiting after that)
 *   MAP    i64 capacity, str path: a segment of the worker's (a file it made in the segment directory,
 *          owner-only, named spark-collective-py-*); mapped here and deleted, so nothing is left when either side
 *          dies. A worker maps several: one it stages arrays through, and one per array it allocated in shared
 *          memory (comm.empty), which calls then use in place
 *          -> OK i32 segment id
 *   UNMAP  i32 segment id: the worker let go of that segment -> OK
 *   CALL   u8 collective, u8 dtype (DType wire code), u8 op (ReduceOp wire code), u8 wire (0 own, 1 bfloat16),
 *          i32 root, i32 segment, i64 offset (bytes), i64 count (elements), i32 out segment, i64 out offset
 *          (all-gather's result)
 *          -> OK i64 a, i64 b (reduce-scatter: this rank's block, offset and length in elements)
 *
 *   str = u16 length + UTF-8. A reply is u8 status (0 OK) and the fields above, or an error: u8 kind (1 usage,
 *   2 peer lost, 3 remote failure, 4 timeout, 5 mismatch, 6 cancelled, 7 authentication, 8 version,
 *   9 collective), i32 rank (the peer it names, or -1), u32 length + UTF-8 message.
 *
 * Nothing is trusted before HELLO's token matched (compared in constant time): frames are bounded to
 * MAX_HELLO bytes until then and the connection is closed after HELLO_TIMEOUT_MS without one.
 */

/** One Python worker's connection to its executor, served on a thread of its own. */
final class PythonSession implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(PythonSession.class);
  static final int PROTOCOL = 3;
  /** Added to the formation's and an operation's timeouts in what a worker is told to wait for a reply. */
  static final long ANSWER_MARGIN_MS = 30_000;
  static final byte HELLO = 1;
  static final byte MAP = 2;
  static final byte CALL = 3;
  static final byte UNMAP = 4;
  /** Segments one worker may have mapped at once. */
  static final int MAX_SEGMENTS = 1024;
  static final byte ALL_REDUCE = 1;
  static final byte REDUCE_SCATTER = 2;
  static final byte ALL_GATHER = 3;
  static final byte BROADCAST = 4;
  static final byte BARRIER = 5;
  static final byte OK = 0;
  static final byte E_USAGE = 1;
  static final byte E_PEER_LOST = 2;
  static final byte E_REMOTE = 3;
  static final byte E_TIMEOUT = 4;
  static final byte E_MISMATCH = 5;
  static final byte E_CANCELLED = 6;
  static final byte E_AUTH = 7;
  static final byte E_VERSION = 8;
  static final byte E_COLLECTIVE = 9;
  static final String SEGMENT_PREFIX = "spark-collective-py-";
  private static final int MAX_HELLO = 512;
  private static final int MAX_REQUEST = 8192;
  private static final int MAX_MESSAGE = 16384;

  private final PythonChannel channel;
  private final SocketChannel socket;
  private final ByteBuffer lengthBuf = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
  private final ByteBuffer reply = ByteBuffer.allocate(MAX_MESSAGE + 64).order(ByteOrder.LITTLE_ENDIAN);
  private ByteBuffer request = ByteBuffer.allocate(MAX_HELLO).order(ByteOrder.LITTLE_ENDIAN);
  private volatile PythonChannel.Task task;
  private Communicator comm;
  private ByteOrder order;
  private final java.util.Map<Integer, MappedByteBuffer> segments = new java.util.HashMap<>();
  private int nextSegment = 1;
  /** False while a call runs and after one that failed (the engine may not be done with the memory). */
  private boolean segmentsIdle = true;
  private volatile boolean closed;

  PythonSession(PythonChannel channel, SocketChannel socket) {
    this.channel = channel;
    this.socket = socket;
  }

  void run() {
    ScheduledFuture<?> deadline = channel.timer().schedule(() -> {
      if (task == null) {
        LOG.warn("a Python worker's connection said no valid hello within {} ms; closing it",
            channel.helloTimeoutMs());
        close();
      }
    }, channel.helloTimeoutMs(), TimeUnit.MILLISECONDS);
    try {
      if (!hello()) {
        return;
      }
      deadline.cancel(false);
      request = ByteBuffer.allocate(MAX_REQUEST).order(ByteOrder.LITTLE_ENDIAN);
      MDC.put(CollectiveExecutorPlugin.MDC_GROUP, task.group());
      MDC.put(CollectiveExecutorPlugin.MDC_RANK, Integer.toString(task.rank()));
      while (readFrame(MAX_REQUEST)) {
        serve();
      }
    } catch (IOException e) {
      if (!closed) {
        LOG.debug("Python worker connection ended: {}", e.toString());
      }
    } finally {
      deadline.cancel(false);
      MDC.remove(CollectiveExecutorPlugin.MDC_GROUP);
      MDC.remove(CollectiveExecutorPlugin.MDC_RANK);
      close();
      for (MappedByteBuffer m : segments.values()) {
        release(m);
      }
      segments.clear();
    }
  }

  /** Reads and answers HELLO; false if the connection is to be closed. */
  private boolean hello() throws IOException {
    if (!readFrame(MAX_HELLO)) {
      return false;
    }
    ByteBuffer in = request;
    byte[] magic = new byte[4];
    byte[] presented = new byte[PythonChannel.TOKEN_BYTES];
    int protocol;
    try {
      if (in.get() != HELLO) {
        return refuse(E_AUTH, "the first message was not a hello");
      }
      in.get(magic);
      protocol = Short.toUnsignedInt(in.getShort());
      in.get(presented);
    } catch (java.nio.BufferUnderflowException e) {
      return refuse(E_AUTH, "the hello is truncated");
    }
    if (!MessageDigest.isEqual(presented, channel.token()) || !"SCPY".equals(new String(magic,
        StandardCharsets.US_ASCII))) {
      LOG.warn("a connection to the Python workers' socket presented a wrong token; closing it");
      return refuse(E_AUTH, "wrong token for this executor's socket");
    }
    if (protocol != PROTOCOL) {
      return refuse(E_VERSION, "the Python package speaks protocol " + protocol + ", this plugin "
          + PluginVersion.VERSION + " speaks " + PROTOCOL + ": install the spark-collective Python package of the "
          + "plugin's version (" + PluginVersion.VERSION + ")");
    }
    String version;
    long taskAttemptId;
    int stageId;
    int stageAttempt;
    int partitionId;
    try {
      order = in.get() == 0 ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN;
      version = string(in);
      taskAttemptId = in.getLong();
      stageId = in.getInt();
      stageAttempt = in.getInt();
      partitionId = in.getInt();
    } catch (java.nio.BufferUnderflowException e) {
      return refuse(E_USAGE, "the hello is truncated");
    }
    if (!PluginVersion.VERSION.equals(version)) {
      return refuse(E_VERSION, "the spark_collective Python package is version " + version + " but the plugin jar "
          + "on this executor is " + PluginVersion.VERSION + ": use the Python package of the plugin's version");
    }
    if (order != ByteOrder.nativeOrder()) {
      return refuse(E_USAGE, "the Python worker's byte order (" + order + ") is not the executor's ("
          + ByteOrder.nativeOrder() + ")");
    }
    try {
      task = channel.tasks().find(taskAttemptId, stageId, stageAttempt, partitionId);
    } catch (CollectiveException e) {
      return refuse(kindOf(e), e.getMessage()); // no such task here, or the plugin did not start
    }
    task.attach(this);
    reply.clear().put(OK).putInt(task.rank()).putInt(task.size());
    putString(reply, PluginVersion.VERSION);
    putString(reply, task.group());
    putString(reply, channel.segmentDir().toString());
    reply.putLong(task.answerWithinMs());
    send();
    return true;
  }

  private boolean refuse(byte kind, String message) throws IOException {
    error(kind, -1, message);
    return false;
  }

  private void serve() throws IOException {
    byte kind = request.get();
    try {
      if (kind == MAP) {
        int id = map();
        reply.clear().put(OK).putInt(id);
      } else if (kind == UNMAP) {
        MappedByteBuffer m = segments.remove(request.getInt());
        if (m == null) {
          throw new CollectiveUsageException("no such segment to unmap");
        }
        release(m);
        reply.clear().put(OK);
      } else if (kind == CALL) {
        call();
      } else {
        throw new CollectiveUsageException("unknown request kind " + kind);
      }
    } catch (java.nio.BufferUnderflowException e) {
      error(E_USAGE, -1, "request of kind " + kind + " is truncated");
      return;
    } catch (CollectiveException e) {
      error(kindOf(e), rankOf(e), e.getMessage());
      return;
    } catch (RuntimeException e) {
      LOG.warn("rank {} of {}: a Python call failed in the executor", task.rank(), task.group(), e);
      error(E_COLLECTIVE, -1, "rank " + task.rank() + " of " + task.group() + ": the executor failed: " + e);
      return;
    }
    send();
  }

  /** Maps a new segment of the worker's; returns its id. */
  private int map() throws IOException {
    if (segments.size() >= MAX_SEGMENTS) {
      throw new CollectiveUsageException("this Python worker has " + MAX_SEGMENTS + " segments mapped already: "
          + "drop arrays made by comm.empty/zeros that are no longer used");
    }
    long capacity = request.getLong();
    String name = string(request);
    if (capacity <= 0 || capacity > Integer.MAX_VALUE) {
      throw new CollectiveUsageException("a segment of " + capacity + " bytes: at most " + Integer.MAX_VALUE);
    }
    Path dir = channel.segmentDir();
    Path p = dir.resolve(name).normalize();
    if (!p.getParent().equals(dir.normalize()) || !p.getFileName().toString().startsWith(SEGMENT_PREFIX)) {
      throw new CollectiveUsageException("segment " + name + " is not a " + SEGMENT_PREFIX + "* file in " + dir);
    }
    BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (!a.isRegularFile() || a.size() < capacity) {
      throw new CollectiveUsageException("segment " + p + " is not a regular file of " + capacity + " bytes");
    }
    if (!Files.getOwner(p, LinkOption.NOFOLLOW_LINKS).equals(Files.getOwner(dir))) {
      throw new CollectiveUsageException("segment " + p + " belongs to another user");
    }
    MappedByteBuffer m;
    try (FileChannel fc = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE,
        LinkOption.NOFOLLOW_LINKS)) {
      m = fc.map(FileChannel.MapMode.READ_WRITE, 0, capacity);
    } finally {
      Files.deleteIfExists(p);
    }
    int id = nextSegment++;
    segments.put(id, m);
    return id;
  }

  private void call() {
    byte collective = request.get();
    int dtypeCode = request.get();
    int opCode = request.get();
    int wire = request.get();
    int root = request.getInt();
    int segment = request.getInt();
    long offset = request.getLong();
    long count = request.getLong();
    int outSegment = request.getInt();
    long outOffset = request.getLong();
    if (comm == null) {
      comm = task.communicator();
    }
    CollectiveOptions options = wire == 1 ? CollectiveOptions.DEFAULT.withWireType(DType.BF16)
        : wire == 2 ? CollectiveOptions.DEFAULT.withWireType(DType.F32) : CollectiveOptions.DEFAULT;
    if (collective == BARRIER) {
      comm.barrier(options);
      reply.clear().put(OK).putLong(0).putLong(0);
      return;
    }
    DType dtype = dtype(dtypeCode);
    DataBuffer data = region(segment, offset, count, dtype, "the array");
    segmentsIdle = false;
    long a = 0;
    long b = 0;
    switch (collective) {
      case ALL_REDUCE:
        comm.allReduce(data, op(opCode), options);
        break;
      case REDUCE_SCATTER:
        comm.reduceScatter(data, op(opCode), options);
        a = Blocks.offset((int) count, comm.size(), comm.rank());
        b = Blocks.length((int) count, comm.size(), comm.rank());
        break;
      case ALL_GATHER:
        // count is at most the segment's capacity (region above): these products stay far below overflow.
        long outBytes = count * comm.size() * dtype.byteSize();
        DataBuffer out = region(outSegment, outOffset, count * comm.size(), dtype, "all_gather's output");
        if (segment == outSegment && outOffset < offset + count * dtype.byteSize() && offset < outOffset + outBytes) {
          throw new CollectiveUsageException("all_gather's input and output overlap in the segment");
        }
        comm.allGather(data, out, options);
        break;
      case BROADCAST:
        comm.broadcast(data, root, options);
        break;
      default:
        throw new CollectiveUsageException("unknown collective " + collective);
    }
    segmentsIdle = true;
    reply.clear().put(OK).putLong(a).putLong(b);
  }

  private DataBuffer region(int id, long offset, long count, DType dtype, String what) {
    MappedByteBuffer segment = segments.get(id);
    if (segment == null) {
      throw new CollectiveUsageException("no segment " + id + " is mapped for " + what);
    }
    // Counts are bounded before they are multiplied: the segment is at most 2 GiB, so no product overflows.
    if (offset < 0 || count < 0 || count > segment.capacity() || offset % dtype.byteSize() != 0
        || offset + count * dtype.byteSize() > segment.capacity()) {
      throw new CollectiveUsageException(what + " (" + count + " " + dtype + " at byte " + offset + ") is not "
          + "inside the segment of " + segment.capacity() + " bytes");
    }
    ByteBuffer b = segment.duplicate().order(order);
    b.limit((int) (offset + count * dtype.byteSize())).position((int) offset);
    return DataBuffer.of(b, dtype);
  }

  private static DType dtype(int code) {
    for (DType t : DType.values()) {
      if (t.wireCode() == code) {
        return t;
      }
    }
    throw new CollectiveUsageException("unknown element type code " + code);
  }

  private static ReduceOp op(int code) {
    for (ReduceOp o : ReduceOp.values()) {
      if (o.wireCode() == code) {
        return o;
      }
    }
    throw new CollectiveUsageException("unknown reduction code " + code);
  }

  static byte kindOf(CollectiveException e) {
    if (e instanceof CollectiveUsageException) {
      return E_USAGE;
    } else if (e instanceof PeerLostException) {
      return E_PEER_LOST;
    } else if (e instanceof RemoteFailureException) {
      return E_REMOTE;
    } else if (e instanceof CollectiveTimeoutException) {
      return E_TIMEOUT;
    } else if (e instanceof CollectiveMismatchException) {
      return E_MISMATCH;
    } else if (e instanceof CollectiveCancelledException) {
      return E_CANCELLED;
    } else if (e instanceof CollectiveAuthenticationException) {
      return E_AUTH;
    }
    return E_COLLECTIVE;
  }

  static int rankOf(CollectiveException e) {
    if (e instanceof PeerLostException) {
      return ((PeerLostException) e).peerRank();
    } else if (e instanceof RemoteFailureException) {
      return ((RemoteFailureException) e).originRank();
    } else if (e instanceof CollectiveTimeoutException) {
      return ((CollectiveTimeoutException) e).peerRank();
    }
    return -1;
  }

  private void error(byte kind, int rank, String message) throws IOException {
    byte[] m = String.valueOf(message).getBytes(StandardCharsets.UTF_8);
    int n = Math.min(m.length, MAX_MESSAGE);
    reply.clear().put(kind).putInt(rank).putInt(n).put(m, 0, n);
    send();
  }

  private void send() throws IOException {
    reply.flip();
    lengthBuf.clear().putInt(reply.remaining()).flip();
    ByteBuffer[] both = {lengthBuf, reply};
    while (reply.hasRemaining()) {
      socket.write(both);
    }
  }

  /** Reads one frame into {@link #request}; false at a clean end of stream. */
  private boolean readFrame(int max) throws IOException {
    lengthBuf.clear();
    if (!fill(lengthBuf, true)) {
      return false;
    }
    int n = lengthBuf.flip().getInt();
    if (n <= 0 || n > max) {
      throw new IOException("a frame of " + n + " bytes (at most " + max + ")");
    }
    request.clear().limit(n);
    fill(request, false);
    request.flip();
    return true;
  }

  private boolean fill(ByteBuffer b, boolean endOk) throws IOException {
    while (b.hasRemaining()) {
      if (socket.read(b) < 0) {
        if (endOk && b.position() == 0) {
          return false;
        }
        throw new EOFException("the Python worker closed its connection in the middle of a message");
      }
    }
    return true;
  }

  private static String string(ByteBuffer in) {
    int n = Short.toUnsignedInt(in.getShort());
    byte[] b = new byte[n];
    in.get(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  private static void putString(ByteBuffer out, String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.putShort((short) b.length).put(b);
  }

  /**
   * Lets go of a segment: unmapped at once while the calls so far completed; after a failed one the engine's
   * threads might still touch it, so it is left to the GC, which unmaps it once nothing can.
   */
  private void release(MappedByteBuffer m) {
    if (segmentsIdle) {
      Mappings.unmap(m);
    }
  }

  /** Closes the connection; the session's own thread lets go of the segment once no call uses it. */
  @Override
  public void close() {
    if (!closed) {
      closed = true;
      PythonChannel.closeQuietly(socket);
    }
  }
}
