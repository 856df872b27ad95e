package io.sparkcollective.spark;

import io.sparkcollective.core.api.Communicator;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's door for its Python tasks. A Unix-domain socket in a directory that only the executor's user
 * can enter, announced, with a random token every connection must present first, in a file (owner-only) in
 * each of the executor's local directories: Spark gives its Python workers those directories as
 * {@code SPARK_LOCAL_DIRS}, so a worker finds its own executor's door without any configuration, and a
 * process of another executor or user cannot use it. One {@link PythonSession} per connection, on a thread of
 * its own; array data goes through memory the worker maps, never through the socket.
 */
final class PythonChannel implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(PythonChannel.class);
  /** Name of the file, in each local directory, that says where the socket is (read by the Python package). */
  static final String ANNOUNCEMENT = "spark-collective-python";
  static final int TOKEN_BYTES = 32;
  /** Connections at once: a few per task slot is plenty; more are refused at once. */
  static final int MAX_SESSIONS = 64;
  /** A connection that has not authenticated within this is closed. */
  static final long HELLO_TIMEOUT_MS = 10_000;
  /** Longest path of a Unix-domain socket on Linux (sun_path holds 108 bytes with the terminating zero). */
  static final int MAX_SOCKET_PATH = 107;
  private final long helloTimeoutMs;

  /** What a session needs of the executor: the running barrier tasks. */
  interface Tasks {
    /**
     * The running barrier task {@code taskAttemptId} of this executor, checked against the stage, attempt and
     * partition the worker sees.
     *
     * @throws io.sparkcollective.core.api.CollectiveUsageException if no such task runs here
     */
    Task find(long taskAttemptId, int stageId, int stageAttempt, int partitionId);
  }

  /** One running barrier task as a Python worker uses it. */
  interface Task {
    int rank();

    int size();

    String group();

    /** The task's communicator, formed on the first call (the same one a Java task of the attempt gets). */
    Communicator communicator();

    /** {@code session} is closed when the task ends, however it ends. */
    void attach(Closeable session);

    /**
     * The longest a request of this task's worker can take to be answered: the group's formation and an
     * operation each run out their timeouts before the reply says so. The worker gives up waiting after it.
     */
    long answerWithinMs();
  }

  private final Path dir;
  private final Path socket;
  private final List<Path> announcements = new ArrayList<>();
  private final ServerSocketChannel server;
  private final byte[] token;
  private final Tasks tasks;
  private final Path segmentDir;
  private final Set<PythonSession> sessions = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService timer;
  private final AtomicInteger counter = new AtomicInteger();
  private final Thread acceptor;
  private volatile boolean closed;

  private PythonChannel(Path dir, ServerSocketChannel server, byte[] token, Tasks tasks, Path segmentDir,
      long helloTimeoutMs) {
    this.dir = dir;
    this.helloTimeoutMs = helloTimeoutMs;
    this.socket = dir.resolve("s");
    this.server = server;
    this.token = token;
    this.tasks = tasks;
    this.segmentDir = segmentDir;
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "collective-python-timer"));
    this.acceptor = daemon(this::acceptLoop, "collective-python-accept");
  }

  /**
   * Opens the door and announces it in every directory of {@code localDirs}; Python workers map their array
   * segments in {@code segmentDir}.
   */
  static PythonChannel open(File[] localDirs, Path segmentDir, Tasks tasks) throws IOException {
    return open(localDirs, segmentDir, tasks, HELLO_TIMEOUT_MS);
  }

  static PythonChannel open(File[] localDirs, Path segmentDir, Tasks tasks, long helloTimeoutMs)
      throws IOException {
    return open(localDirs, segmentDir, tasks, helloTimeoutMs, Path.of(System.getProperty("java.io.tmpdir")));
  }

  /**
   * As above, with the socket's directory made in {@code tmp}, or, when a socket there would have a longer path
   * than a Unix-domain socket can ({@link #MAX_SOCKET_PATH} bytes), in the first of /tmp, /dev/shm and /var/tmp
   * where it fits.
   */
  static PythonChannel open(File[] localDirs, Path segmentDir, Tasks tasks, long helloTimeoutMs, Path tmp)
      throws IOException {
    Path dir = null;
    List<Path> tried = new ArrayList<>();
    for (Path base : new Path[] {tmp, Path.of("/tmp"), Path.of("/dev/shm"), Path.of("/var/tmp")}) {
      Path b = base.toAbsolutePath();
      tried.add(b);
      // The directory's name is the prefix and a number of at most 20 digits; the socket is "s" in it.
      if (b.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length + 1 + "sc-py-".length() + 20 + 2
          <= MAX_SOCKET_PATH && Files.isDirectory(b) && Files.isWritable(b)) {
        dir = Files.createTempDirectory(b, "sc-py-", PosixFilePermissions.asFileAttribute(
            PosixFilePermissions.fromString("rwx------")));
        break;
      }
    }
    if (dir == null) {
      throw new IOException("no directory for the Python workers' socket: a Unix-domain socket's path has at most "
          + MAX_SOCKET_PATH + " bytes, and none of " + tried + " is short enough and writable");
    }
    ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    PythonChannel c;
    try {
      server.bind(UnixDomainSocketAddress.of(dir.resolve("s")));
      Files.setPosixFilePermissions(dir.resolve("s"), PosixFilePermissions.fromString("rw-------"));
      byte[] token = new byte[TOKEN_BYTES];
      new SecureRandom().nextBytes(token);
      c = new PythonChannel(dir, server, token, tasks, segmentDir, helloTimeoutMs);
    } catch (IOException | RuntimeException e) {
      server.close();
      deleteQuietly(dir.resolve("s"));
      deleteQuietly(dir);
      throw e;
    }
    try {
      String text = "version=" + PluginVersion.VERSION + "\nsocket=" + c.socket + "\ntoken="
          + HexFormat.of().formatHex(c.token) + "\n";
      for (File local : localDirs) {
        c.announce(local.toPath(), text);
      }
    } catch (IOException | RuntimeException e) {
      c.close();
      throw e;
    }
    c.acceptor.start();
    LOG.info("Python workers reach this executor at {}", c.socket);
    return c;
  }

  private void announce(Path local, String text) throws IOException {
    Path tmp = local.resolve(ANNOUNCEMENT + ".tmp");
    Files.deleteIfExists(tmp);
    Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(tmp, text);
    Path target = local.resolve(ANNOUNCEMENT);
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    announcements.add(target);
  }

  Path socket() {
    return socket;
  }

  int sessions() {
    return sessions.size();
  }

  byte[] token() {
    return token.clone();
  }

  Path segmentDir() {
    return segmentDir;
  }

  Tasks tasks() {
    return tasks;
  }

  long helloTimeoutMs() {
    return helloTimeoutMs;
  }

  ScheduledExecutorService timer() {
    return timer;
  }

  private void acceptLoop() {
    while (!closed) {
      SocketChannel ch;
      try {
        ch = server.accept();
      } catch (IOException e) {
        if (!closed) {
          LOG.warn("the Python workers' socket {} stopped accepting: {}", socket, e.toString());
        }
        return;
      }
      if (sessions.size() >= MAX_SESSIONS) {
        LOG.warn("refusing a Python worker's connection: {} are open already", sessions.size());
        closeQuietly(ch);
        continue;
      }
      PythonSession s = new PythonSession(this, ch);
      sessions.add(s);
      daemon(() -> {
        try {
          s.run();
        } finally {
          sessions.remove(s);
        }
      }, "collective-python-" + counter.incrementAndGet()).start();
    }
  }

  @Override
  public void close() {
    closed = true;
    closeQuietly(server);
    for (PythonSession s : sessions) {
      s.close();
    }
    timer.shutdownNow();
    for (Path p : announcements) {
      deleteQuietly(p);
    }
    deleteQuietly(socket);
    deleteQuietly(dir);
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  static void closeQuietly(Closeable c) {
    try {
      c.close();
    } catch (IOException e) {
      LOG.debug("close: {}", e.toString());
    }
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      LOG.debug("cannot delete {}: {}", p, e.toString());
    }
  }
}
