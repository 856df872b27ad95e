package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.engine.LocalGroup;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The executor's door for Python workers, spoken to by hand over a real Unix-domain socket: what an
 * unauthenticated or misbehaving client can make it do, and a two-rank all-reduce through mapped segments.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PythonChannelTest {
  @TempDir
  Path local;
  @TempDir
  Path segments;
  private LocalGroup group;
  private final List<Closeable> attached = new ArrayList<>();
  private PythonChannel channel;

  @BeforeEach
  void open() throws IOException {
    group = LocalGroup.create(2);
    channel = PythonChannel.open(new File[] {local.toFile()}, segments, this::task, 500);
  }

  @AfterEach
  void close() {
    channel.close();
    group.close();
  }

  /** Tasks 100 and 101 run partitions 0 and 1 of stage 7 attempt 0. */
  private PythonChannel.Task task(long id, int stage, int attempt, int partition) {
    if ((id != 100 && id != 101) || stage != 7 || partition != id - 100) {
      throw new CollectiveUsageException("task " + id + " is not a running barrier task");
    }
    int rank = (int) (id - 100);
    return new PythonChannel.Task() {
      @Override
      public int rank() {
        return rank;
      }

      @Override
      public int size() {
        return 2;
      }

      @Override
      public String group() {
        return "app/stage-7/attempt-0";
      }

      @Override
      public Communicator communicator() {
        return group.communicator(rank);
      }

      @Override
      public long answerWithinMs() {
        return 45_000;
      }

      @Override
      public void attach(Closeable session) {
        synchronized (attached) {
          attached.add(session);
        }
      }
    };
  }

  private Map<String, String> announcement() throws IOException {
    Map<String, String> m = new java.util.HashMap<>();
    for (String line : Files.readAllLines(local.resolve(PythonChannel.ANNOUNCEMENT))) {
      m.put(line.substring(0, line.indexOf('=')), line.substring(line.indexOf('=') + 1));
    }
    return m;
  }

  /** A client speaking the protocol as the Python package does. */
  private final class Client implements Closeable {
    final SocketChannel ch;

    Client() throws IOException {
      ch = SocketChannel.open(StandardProtocolFamily.UNIX);
      ch.connect(UnixDomainSocketAddress.of(announcement().get("socket")));
    }

    void send(ByteBuffer body) throws IOException {
      body.flip();
      ByteBuffer len = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, body.remaining());
      ch.write(new ByteBuffer[] {len, body});
    }

    /** The next reply, or null when the executor closed the connection. */
    ByteBuffer reply() throws IOException {
      ByteBuffer len = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
      while (len.hasRemaining()) {
        if (ch.read(len) < 0) {
          return null;
        }
      }
      ByteBuffer b = ByteBuffer.allocate(len.getInt(0)).order(ByteOrder.LITTLE_ENDIAN);
      while (b.hasRemaining()) {
        if (ch.read(b) < 0) {
          return null;
        }
      }
      return b.flip();
    }

    ByteBuffer hello(byte[] token, String version, long task, int partition) throws IOException {
      ByteBuffer b = body().put(PythonSession.HELLO).put("SCPY".getBytes(StandardCharsets.US_ASCII))
          .putShort((short) PythonSession.PROTOCOL).put(token)
          .put((byte) (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN ? 0 : 1));
      putString(b, version);
      b.putLong(task).putInt(7).putInt(0).putInt(partition);
      send(b);
      return reply();
    }

    ByteBuffer map(String name, long capacity) throws IOException {
      ByteBuffer b = body().put(PythonSession.MAP).putLong(capacity);
      putString(b, name);
      send(b);
      return reply();
    }

    ByteBuffer call(byte collective, int dtype, int op, int segment, long offset, long count) throws IOException {
      send(body().put(PythonSession.CALL).put(collective).put((byte) dtype).put((byte) op).put((byte) 0).putInt(0)
          .putInt(segment).putLong(offset).putLong(count).putInt(segment).putLong(0));
      return reply();
    }

    ByteBuffer unmap(int segment) throws IOException {
      send(body().put(PythonSession.UNMAP).putInt(segment));
      return reply();
    }

    @Override
    public void close() throws IOException {
      ch.close();
    }
  }

  private static ByteBuffer body() {
    return ByteBuffer.allocate(1024).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static void putString(ByteBuffer b, String s) {
    byte[] x = s.getBytes(StandardCharsets.UTF_8);
    b.putShort((short) x.length).put(x);
  }

  private static String errorText(ByteBuffer r) {
    int n = r.getInt(5);
    byte[] m = new byte[n];
    r.get(9, m);
    return new String(m, StandardCharsets.UTF_8);
  }

  private byte[] token() throws IOException {
    return HexFormat.of().parseHex(announcement().get("token"));
  }

  @Test
  void shouldOpenItsSocketWhereThePathFitsWhenTheTemporaryDirectoryIsTooDeep() throws IOException {
    channel.close();
    // 130 bytes of directory names: a socket below it could not be bound (at most 107 bytes).
    Path deep = Files.createDirectories(local.resolve("d".repeat(60)).resolve("e".repeat(60)));
    channel = PythonChannel.open(new File[] {local.toFile()}, segments, this::task, 500, deep);
    String socket = announcement().get("socket");
    assertTrue(socket.getBytes(StandardCharsets.UTF_8).length <= PythonChannel.MAX_SOCKET_PATH, socket);
    assertFalse(socket.startsWith(deep.toString()), socket);
    try (Client c = new Client()) {
      ByteBuffer hello = c.hello(token(), PluginVersion.VERSION, 100, 0);
      assertEquals(PythonSession.OK, hello.get(0), () -> errorText(hello));
    }
  }

  @Test
  void shouldAnnounceTheSocketOwnerOnlyWithTheVersionAndAToken() throws IOException {
    Path file = local.resolve(PythonChannel.ANNOUNCEMENT);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    Path socket = Path.of(announcement().get("socket"));
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket.getParent())));
    assertEquals(PluginVersion.VERSION, announcement().get("version"));
    assertEquals(PythonChannel.TOKEN_BYTES, token().length);
    channel.close();
    assertTrue(!Files.exists(file) && !Files.exists(socket.getParent()), "closing removes the door and its notice");
  }

  @Test
  void shouldRefuseAWrongTokenAndCloseTheConnection() throws IOException {
    try (Client c = new Client()) {
      byte[] wrong = token();
      wrong[0] ^= 1;
      ByteBuffer r = c.hello(wrong, PluginVersion.VERSION, 100, 0);
      assertEquals(PythonSession.E_AUTH, r.get(0));
      assertTrue(errorText(r).contains("wrong token"), errorText(r));
      assertEquals(null, c.reply(), "closed after the refusal");
    }
  }

  @Test
  void shouldCloseAConnectionThatSendsAnOversizedFirstFrameOrNothing() throws IOException {
    try (Client c = new Client()) {
      ByteBuffer len = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 1 << 30);
      c.ch.write(len);
      assertEquals(null, c.reply(), "a 1 GiB frame before the hello: closed, nothing allocated for it");
    }
    try (Client c = new Client()) {
      long t0 = System.nanoTime();
      assertEquals(null, c.reply(), "silent client: closed at the hello deadline");
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ms >= 400 && ms < 5000, "closed after " + ms + " ms (deadline 500)");
    }
  }

  @Test
  void shouldNameTheVersionsAndTheUnknownTask() throws IOException {
    try (Client c = new Client()) {
      ByteBuffer r = c.hello(token(), "0.0.1", 100, 0);
      assertEquals(PythonSession.E_VERSION, r.get(0));
      assertTrue(errorText(r).contains("0.0.1") && errorText(r).contains(PluginVersion.VERSION), errorText(r));
    }
    try (Client c = new Client()) {
      ByteBuffer r = c.hello(token(), PluginVersion.VERSION, 555, 0);
      assertEquals(PythonSession.E_USAGE, r.get(0));
      assertTrue(errorText(r).contains("task 555 is not a running barrier task"), errorText(r));
    }
  }

  @Test
  void shouldMapOnlyOwnSegmentFilesInTheSegmentDirectory() throws IOException {
    try (Client c = new Client()) {
      assertEquals(PythonSession.OK, c.hello(token(), PluginVersion.VERSION, 100, 0).get(0));
      Path outside = Files.createTempFile("spark-collective-py-", "");
      Files.write(outside, new byte[4096]);
      ByteBuffer r = c.map("../" + outside.getFileName(), 4096);
      assertEquals(PythonSession.E_USAGE, r.get(0));
      assertTrue(errorText(r).contains("is not a spark-collective-py-* file in"), errorText(r));
      Path link = segments.resolve("spark-collective-py-link");
      Files.createSymbolicLink(link, outside);
      r = c.map(link.getFileName().toString(), 4096);
      assertEquals(PythonSession.E_USAGE, r.get(0), "a symbolic link is not followed");
      Path small = Files.write(segments.resolve("spark-collective-py-small"), new byte[16]);
      r = c.map(small.getFileName().toString(), 4096);
      assertTrue(errorText(r).contains("not a regular file of 4096 bytes"), errorText(r));
      r = c.call(PythonSession.ALL_REDUCE, 1, 1, 1, 0, 4);
      assertEquals(PythonSession.E_USAGE, r.get(0));
      assertTrue(errorText(r).contains("no segment 1 is mapped"), errorText(r));
      Files.delete(outside);
    }
  }

  /** A worker cannot make the executor map more than {@link PythonSession#MAX_SEGMENTS} segments at once. */
  @Test
  void shouldBoundTheSegmentsOneWorkerMaps() throws IOException {
    try (Client c = new Client()) {
      assertEquals(PythonSession.OK, c.hello(token(), PluginVersion.VERSION, 100, 0).get(0));
      int last = 0;
      for (int i = 0; i <= PythonSession.MAX_SEGMENTS; i++) {
        Path seg = Files.write(segments.resolve("spark-collective-py-n" + i), new byte[4096]);
        ByteBuffer r = c.map(seg.getFileName().toString(), 4096);
        if (i < PythonSession.MAX_SEGMENTS) {
          assertEquals(PythonSession.OK, r.get(0), () -> errorText(r));
          last = r.getInt(1);
        } else {
          assertEquals(PythonSession.E_USAGE, r.get(0));
          assertTrue(errorText(r).contains(PythonSession.MAX_SEGMENTS + " segments mapped already"), errorText(r));
          Files.deleteIfExists(seg);
        }
      }
      assertEquals(PythonSession.OK, c.unmap(last).get(0));
      Path again = Files.write(segments.resolve("spark-collective-py-again"), new byte[4096]);
      assertEquals(PythonSession.OK, c.map(again.getFileName().toString(), 4096).get(0), "room again after an unmap");
    }
  }

  /** Rank {@code rank}'s client: hello, a segment, one all-reduce of {@code values}; returns the result. */
  private float[] allReduce(int rank, float[] values, long offsetBytes) throws IOException {
    try (Client c = new Client()) {
      ByteBuffer hello = c.hello(token(), PluginVersion.VERSION, 100 + rank, rank);
      assertEquals(PythonSession.OK, hello.get(0), () -> errorText(hello));
      assertEquals(rank, hello.getInt(1));
      // The reply ends with how long the worker may wait for any later answer: the task's own figure.
      assertEquals(45_000, hello.getLong(hello.limit() - Long.BYTES));
      Path seg = segments.resolve("spark-collective-py-" + rank);
      long capacity = 1 << 20;
      MappedByteBuffer m;
      try (FileChannel fc = FileChannel.open(seg, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
          StandardOpenOption.WRITE)) {
        fc.truncate(capacity);
        fc.write(ByteBuffer.allocate(1), capacity - 1);
        m = fc.map(FileChannel.MapMode.READ_WRITE, 0, capacity);
      }
      ByteBuffer mapped = c.map(seg.getFileName().toString(), capacity);
      assertEquals(PythonSession.OK, mapped.get(0));
      int id = mapped.getInt(1);
      assertTrue(!Files.exists(seg), "the executor deletes the segment's name once mapped");
      m.order(ByteOrder.nativeOrder()).position((int) offsetBytes);
      m.asFloatBuffer().put(values);
      ByteBuffer r = c.call(PythonSession.ALL_REDUCE, 1, 1, id, offsetBytes, values.length);
      assertEquals(PythonSession.OK, r.get(0), () -> errorText(r));
      float[] out = new float[values.length];
      m.position((int) offsetBytes);
      m.asFloatBuffer().get(out);
      ByteBuffer bad = c.call(PythonSession.ALL_REDUCE, 1, 1, id, capacity - 8, 4);
      assertEquals(PythonSession.E_USAGE, bad.get(0), "a region past the segment's end");
      assertTrue(errorText(bad).contains("is not inside the segment of 1048576 bytes"), errorText(bad));
      // A count whose byte length overflows a long to a small number is refused, not wrapped around.
      ByteBuffer wrap = c.call(PythonSession.ALL_REDUCE, 1, 1, id, 0, 1L << 62);
      assertEquals(PythonSession.E_USAGE, wrap.get(0), "4 * 2^62 bytes wraps to 0");
      ByteBuffer gather = c.call(PythonSession.ALL_GATHER, 1, 0, id, 0, (1L << 62) + 1);
      assertEquals(PythonSession.E_USAGE, gather.get(0), "all_gather's output length is bounded too");
      // Once unmapped, the segment is gone for calls; a second unmap of it is refused.
      assertEquals(PythonSession.OK, c.unmap(id).get(0));
      ByteBuffer gone = c.call(PythonSession.ALL_REDUCE, 1, 1, id, 0, 4);
      assertTrue(errorText(gone).contains("no segment " + id + " is mapped"), errorText(gone));
      assertTrue(errorText(c.unmap(id)).contains("no such segment"));
      return out;
    }
  }

  @Test
  void shouldAllReduceTwoWorkersArraysInTheirSegments() throws Exception {
    int n = 100_003;
    float[] a = new float[n];
    float[] b = new float[n];
    float[] sum = new float[n];
    for (int i = 0; i < n; i++) {
      a[i] = i * 0.5f;
      b[i] = -i + 3;
      sum[i] = a[i] + b[i];
    }
    CompletableFuture<float[]> r0 = CompletableFuture.supplyAsync(() -> {
      try {
        return allReduce(0, a, 0);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    float[] r1 = allReduce(1, b, 4096);
    assertArrayEquals(sum, r0.get(30, TimeUnit.SECONDS));
    assertArrayEquals(sum, r1);
    assertEquals(2, attached.size(), "each session attached to its task");
  }
}
