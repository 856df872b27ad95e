package io.sparkcollective.core.config;

import io.sparkcollective.core.api.Algorithm;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.auth.DataProtection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Every setting of the engine, with its default and meaning, in one place. Keys are written without a
 * prefix here; in Spark they are {@code spark.collective.<key>} ({@link #SPARK_PREFIX}), and
 * {@code conf/spark-defaults.conf.example} lists exactly these keys (a test checks it).
 *
 * <p>Immutable. Build with {@link #defaults()} or {@link #from(Map)}, which rejects unknown keys and bad
 * values with a message naming the key.
 */
public final class CollectiveConfig {
  public static final String SPARK_PREFIX = "spark.collective.";

  /** Largest {@link #SEGMENT_BYTES}: 64 MiB. */
  public static final int MAX_SEGMENT_BYTES = 64 << 20;
  public static final String PORT = "port";
  public static final String BIND_ADDRESS = "bindAddress";
  public static final String BIND_INTERFACE = "bindInterface";
  public static final String OPERATION_TIMEOUT_MS = "operation.timeoutMs";
  public static final String SEGMENT_BYTES = "segmentBytes";
  public static final String LOCAL_SEGMENT_BYTES = "localSegmentBytes";
  public static final String ALGORITHM = "algorithm";
  public static final String DIRECT_MAX_BYTES = "algorithm.directMaxBytes";
  public static final String DIRECT_MAX_RANKS = "algorithm.directMaxRanks";
  public static final String RING_MIN_BYTES = "algorithm.ringMinBytes";
  public static final String LINK_MBPS = "algorithm.linkMbps";
  public static final String STEP_MICROS = "algorithm.stepMicros";
  public static final String MESSAGE_MICROS = "algorithm.messageMicros";
  public static final String MEASURE_LINK = "algorithm.measureLink";
  public static final String BROADCAST_CHAIN_MIN_BYTES = "broadcast.chainMinBytes";
  public static final String OBJECT_MAX_BYTES = "objects.maxBytes";
  public static final String JOIN_TIMEOUT_MS = "group.joinTimeoutMs";
  public static final String FORM_AT_TASK_START = "group.formAtTaskStart";
  public static final String CONNECT_TIMEOUT_MS = "transport.connectTimeoutMs";
  public static final String HEARTBEAT_INTERVAL_MS = "transport.heartbeatIntervalMs";
  public static final String HEARTBEAT_TIMEOUT_MS = "transport.heartbeatTimeoutMs";
  public static final String SOCKET_BUFFER_BYTES = "transport.socketBufferBytes";
  public static final String IO_THREADS = "transport.ioThreads";
  public static final String CHANNELS = "transport.channels";
  public static final String CHECKSUM = "transport.checksum";
  public static final String PROGRESS = "transport.progress";
  public static final String SPIN_MICROS = "transport.spinMicros";
  public static final String SHARED_MEMORY_BYTES = "transport.sharedMemoryBytes";
  public static final String SHARED_MEMORY_DIR = "transport.sharedMemoryDir";
  public static final String DATA_PROTECTION = "transport.dataProtection";
  public static final String TLS_ENABLED = "transport.tls.enabled";
  public static final String TLS_KEY_STORE = "transport.tls.keyStore";
  public static final String TLS_KEY_STORE_PASSWORD = "transport.tls.keyStorePassword";
  public static final String TLS_KEY_STORE_TYPE = "transport.tls.keyStoreType";
  public static final String TLS_TRUST_STORE = "transport.tls.trustStore";
  public static final String TLS_TRUST_STORE_PASSWORD = "transport.tls.trustStorePassword";
  public static final String TLS_PROTOCOL = "transport.tls.protocol";
  public static final String TLS_KEY_PASSWORD = "transport.tls.keyPassword";
  public static final String TLS_ENABLED_ALGORITHMS = "transport.tls.enabledAlgorithms";
  public static final String TLS_VERIFY_PEER_NAME = "transport.tls.verifyPeerName";

  private static final Map<String, String[]> KEYS = new LinkedHashMap<>();

  static {
    key(PORT, "0", "Port of the endpoint (one per executor): 0 for any free port, a port, or a range like "
        + "7100-7199 (the first free one is taken) for firewalled clusters.");
    key(BIND_ADDRESS, "", "Address the endpoint listens on and peers dial; empty for the executor's own host.");
    key(BIND_INTERFACE, "", "Network interface (e.g. eth1) whose address the endpoint listens on and peers dial, "
        + "instead of bindAddress; empty for none.");
    // Lost, killed and frozen peers are detected by connection loss, the caller's cancellation and heartbeats
    // within seconds; the two timeouts only bound a peer that is alive but never makes the call (a bug, or one
    // far behind). So they are long, like PyTorch's 10 minutes for NCCL groups: a rank loading a large partition
    // or running a long step must never be failed for being slow.
    key(OPERATION_TIMEOUT_MS, "600000", "Deadline of one collective operation, unless its options say otherwise: "
        + "only for a live peer that never makes the same call (lost, killed and frozen peers fail the operation "
        + "within seconds).");
    key(SEGMENT_BYTES, "524288", "Largest payload of one frame; large messages are cut into segments of this "
        + "size so that sending one overlaps reducing the previous (a power of two, 4 KiB to 64 MiB). Groups whose "
        + "processes reach each other only over sockets use it; see localSegmentBytes for the others.");
    key(LOCAL_SEGMENT_BYTES, "262144", "Segment size of groups whose ranks all share one process, or that have "
        + "executors on one host exchanging payloads through shared memory: smaller segments keep the copies in "
        + "the caches there (a power of two, 4 KiB to 64 MiB; at most segmentBytes, which wins if smaller).");
    key(ALGORITHM, "AUTO",
        "All-reduce algorithm: AUTO (by size and placement), RING, DIRECT, HALVING_DOUBLING, HIERARCHICAL, RING_2D "
        + "or RECURSIVE_DOUBLING.");
    key(DIRECT_MAX_BYTES, "16384", "Up to this many bytes AUTO uses DIRECT at two ranks and where every peer is "
        + "reached through memory (if the group is small enough), RECURSIVE_DOUBLING otherwise.");
    key(DIRECT_MAX_RANKS, "8", "AUTO uses DIRECT only for groups of at most this many ranks.");
    key(RING_MIN_BYTES, "4194304", "AUTO uses RING from this many bytes on, HALVING_DOUBLING below (in groups of "
        + "a power of two ranks; other groups take RING above algorithm.directMaxBytes).");
    key(LINK_MBPS, "0", "The rate of each host's network link in megabits per second and direction, if known "
        + "(0: not known: AUTO follows the thresholds above in groups of up to 4 executors of one host, where they "
        + "were measured, and otherwise its cost model on the link the group measures, see "
        + "algorithm.measureLink). "
        + "With it AUTO takes the algorithm its cost model "
        + "predicts fastest for the group's size, placement and the message (the thresholds above no longer "
        + "apply): the table cannot follow the group size, e.g. 256 ranks on 10 Gbit/s take HALVING_DOUBLING up "
        + "to 64 MiB, where the ring pays 2(N-1) latencies.");
    key(STEP_MICROS, "50", "The latency of one message between two hosts, in microseconds, as AUTO's cost model "
        + "weighs it when algorithm.linkMbps is set (the one-way time of a small message: 5-50 us in data "
        + "centres).");
    key(MESSAGE_MICROS, "1", "The CPU one message costs a rank on each side (system calls, the kernel's network "
        + "work, wake-ups), in microseconds, as AUTO's cost model weighs it when algorithm.linkMbps is set: it is "
        + "what makes one message per step (RECURSIVE_DOUBLING) beat N-1 at once (DIRECT) over sockets; on the "
        + "test bed of README \"Several hosts\" 13, with algorithm.stepMicros=1.");
    key(MEASURE_LINK, "true", "With algorithm.linkMbps 0, whether a group whose executors reach each other over "
        + "the network, more than 4 of them or on several hosts, measures its link (each executor's first rank "
        + "times round trips of one element and of one segment, and a fan of one element to four others, with "
        + "its neighbours; the group takes the slowest), and AUTO follows its cost model on the rate, latency "
        + "and CPU per message found: before the first all-reduce AUTO chooses for (a group whose executors all "
        + "measured before takes the slowest of their figures instead, with one small all-reduce), and again at "
        + "a tag's 1000th, with the code warm. False: the thresholds up to 4 executors, beyond them the model on "
        + "an assumed 10 Gbit/s link with 10 us per message.");
    key(BROADCAST_CHAIN_MIN_BYTES, "65536", "Broadcasts from this many bytes on use a pipelined chain; "
        + "smaller ones go from the root to every rank directly.");
    key(OBJECT_MAX_BYTES, "1073741824", "Most bytes one object collective (allGatherObjects, broadcastObject) "
        + "carries, all ranks' serialised objects together; a call past it fails on every rank, before anything "
        + "is allocated for it.");
    key(JOIN_TIMEOUT_MS, "600000", "How long a rank waits for every peer to join its group before failing, naming "
        + "the ranks that did not: only for a live rank that never asks (in Spark, a task that failed or was "
        + "killed, or whose executor was lost, fails the join at once).");
    key(FORM_AT_TASK_START, "true", "In Spark: each barrier task starts forming its group in the background "
        + "100 ms after it starts (or at its first call, if sooner), so that its first call finds the group ready "
        + "(the set-up overlaps the task's own work; tasks that end sooner without calling never start it); false "
        + "forms the group at the first call, for clusters that run many barrier stages of other libraries "
        + "beside this plugin.");
    key(CONNECT_TIMEOUT_MS, "10000", "TCP connect plus authentication handshake deadline per connection.");
    key(HEARTBEAT_INTERVAL_MS, "1000", "An idle connection sends a heartbeat this often.");
    key(HEARTBEAT_TIMEOUT_MS, "10000", "A connection that received nothing (not even a heartbeat) for this long is "
        + "closed and its peers are reported lost.");
    key(SOCKET_BUFFER_BYTES, "0", "SO_SNDBUF and SO_RCVBUF of every connection; 0 keeps the OS default (which "
        + "grows with the traffic). Below one TCP segment of the link (64 KiB on loopback) the kernel's small-window "
        + "rules stall the transfer: 8 KiB moved 4 MiB over loopback in 26 s.");
    key(IO_THREADS, "2", "Network I/O threads per endpoint (collective-io-N).");
    key(CHANNELS, "1", "Connections per pair of endpoints (1 to 16); rank r of a group sends over number r mod "
        + "channels, so the ranks of one executor send in parallel.");
    key(PROGRESS, "caller", "Who moves the bytes of plain TCP connections: caller (the thread waiting in a "
        + "collective reads and writes its sockets itself, spinning up to spinMicros before it blocks: one thread "
        + "wake-up per message or none) or eventLoop (Netty's I/O threads do all socket work). TLS connections "
        + "always use eventLoop.");
    key(SPIN_MICROS, "10000", "With progress=caller, how long a waiting thread polls its sockets (yielding the "
        + "CPU between polls, so any other runnable thread goes first) before it blocks; 0 blocks at once. A "
        + "blocked thread's wake-up costs a trip through the scheduler, which on virtual machines and shared cores "
        + "can take longer than the message; less spares the CPU of tasks that wait long for slow peers.");
    key(SHARED_MEMORY_BYTES, "16777216", "With progress=caller, connections between endpoints on the same host "
        + "carry DATA messages through a ring of this many bytes in a shared-memory file (the socket carries "
        + "control messages and wakes a blocked receiver; a message that does not fit goes over the socket); 0 "
        + "sends everything over the socket.");
    key(SHARED_MEMORY_DIR, "/dev/shm", "Directory of the shared-memory rings (a memory file system); if it does "
        + "not exist, payloads go over the socket.");
    key(CHECKSUM, "false", "Adds a CRC32C of every payload and checks it on receipt.");
    key(DATA_PROTECTION, "none", "What every connection's messages carry after the handshake: none (control "
        + "messages are authenticated, DATA payloads travel as they are), authenticate (every message, DATA "
        + "included, with an HMAC-SHA256 tag: nothing forged, altered, replayed or dropped gets through) or "
        + "encrypt (every message encrypted and authenticated with AES-256-GCM; in Spark, "
        + "spark.network.crypto.enabled=true sets it). The same on every executor. Payloads in shared-memory "
        + "rings never leave the host and stay as they are.");
    key(TLS_ENABLED, "false", "Encrypts every connection with TLS (mutual: both ends present a certificate that "
        + "the other's trust store accepts), in addition to the shared-secret handshake.");
    key(TLS_KEY_STORE, "", "Key store with this endpoint's private key and certificate (like spark.ssl.keyStore).");
    key(TLS_KEY_STORE_PASSWORD, "", "Password of the key store and of the key in it.");
    key(TLS_KEY_STORE_TYPE, "PKCS12", "Type of both stores: PKCS12 or JKS.");
    key(TLS_TRUST_STORE, "", "Trust store with the certificates peers must present (like spark.ssl.trustStore).");
    key(TLS_TRUST_STORE_PASSWORD, "", "Password of the trust store.");
    key(TLS_PROTOCOL, "TLSv1.3", "TLS protocol version.");
    key(TLS_KEY_PASSWORD, "", "Password of the private key in the key store, if not the store's own (like "
        + "spark.ssl.keyPassword).");
    key(TLS_ENABLED_ALGORITHMS, "", "Cipher suites to allow, comma-separated (like spark.ssl.enabledAlgorithms); "
        + "empty for the JDK's defaults.");
    key(TLS_VERIFY_PEER_NAME, "true", "The dialling side checks that the peer's certificate names the address it "
        + "dialled (a subject alternative name: the executor's host name or IP address), so a certificate the "
        + "trust store accepts but issued to another machine is refused; false accepts any trusted certificate.");
  }

  private static void key(String name, String defaultValue, String doc) {
    KEYS.put(name, new String[] {defaultValue, doc});
  }

  private final int portFrom;
  private final int portTo;
  private final long operationTimeoutMs;
  private final int segmentBytes;
  private final int localSegmentBytes;
  private final Algorithm algorithm;
  private final long directMaxBytes;
  private final long linkMbps;
  private final long stepMicros;
  private final long messageMicros;
  private final boolean measureLink;
  private final int directMaxRanks;
  private final long ringMinBytes;
  private final long broadcastChainMinBytes;
  private final long objectMaxBytes;
  private final long joinTimeoutMs;
  private final boolean formAtTaskStart;
  private final long connectTimeoutMs;
  private final long heartbeatIntervalMs;
  private final long heartbeatTimeoutMs;
  private final int socketBufferBytes;
  private final int ioThreads;
  private final int channels;
  private final boolean checksum;
  private final DataProtection dataProtection;
  private final boolean callerProgress;
  private final long spinMicros;
  private final int sharedMemoryBytes;
  private final Map<String, String> values;

  private CollectiveConfig(Map<String, String> v) {
    int[] ports = portRange(v.get(PORT));
    this.portFrom = ports[0];
    this.portTo = ports[1];
    this.operationTimeoutMs = positiveLong(v, OPERATION_TIMEOUT_MS);
    long seg = positiveLong(v, SEGMENT_BYTES);
    if (seg < 4096 || seg > MAX_SEGMENT_BYTES || Long.bitCount(seg) != 1) {
      throw bad(SEGMENT_BYTES, v.get(SEGMENT_BYTES), "a power of two from 4096 to 67108864");
    }
    this.segmentBytes = (int) seg;
    long local = positiveLong(v, LOCAL_SEGMENT_BYTES);
    if (local < 4096 || local > MAX_SEGMENT_BYTES || Long.bitCount(local) != 1) {
      throw bad(LOCAL_SEGMENT_BYTES, v.get(LOCAL_SEGMENT_BYTES), "a power of two from 4096 to 67108864");
    }
    this.localSegmentBytes = (int) Math.min(seg, local);
    try {
      this.algorithm = Algorithm.valueOf(v.get(ALGORITHM).trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw bad(ALGORITHM, v.get(ALGORITHM),
          "one of AUTO, RING, DIRECT, HALVING_DOUBLING, HIERARCHICAL, RING_2D, RECURSIVE_DOUBLING");
    }
    this.directMaxBytes = nonNegativeLong(v, DIRECT_MAX_BYTES);
    this.directMaxRanks = (int) Math.min(Integer.MAX_VALUE, nonNegativeLong(v, DIRECT_MAX_RANKS));
    this.ringMinBytes = nonNegativeLong(v, RING_MIN_BYTES);
    this.linkMbps = nonNegativeLong(v, LINK_MBPS);
    this.stepMicros = nonNegativeLong(v, STEP_MICROS);
    this.messageMicros = nonNegativeLong(v, MESSAGE_MICROS);
    this.measureLink = bool(v, MEASURE_LINK);
    this.broadcastChainMinBytes = nonNegativeLong(v, BROADCAST_CHAIN_MIN_BYTES);
    this.objectMaxBytes = nonNegativeLong(v, OBJECT_MAX_BYTES);
    if (objectMaxBytes < 1 || objectMaxBytes > Integer.MAX_VALUE - 8) {
      throw bad(OBJECT_MAX_BYTES, v.get(OBJECT_MAX_BYTES), "from 1 to " + (Integer.MAX_VALUE - 8)
          + " (the largest Java array)");
    }
    this.joinTimeoutMs = positiveLong(v, JOIN_TIMEOUT_MS);
    this.connectTimeoutMs = positiveLong(v, CONNECT_TIMEOUT_MS);
    this.heartbeatIntervalMs = positiveLong(v, HEARTBEAT_INTERVAL_MS);
    this.heartbeatTimeoutMs = positiveLong(v, HEARTBEAT_TIMEOUT_MS);
    if (heartbeatTimeoutMs <= heartbeatIntervalMs) {
      throw bad(HEARTBEAT_TIMEOUT_MS, v.get(HEARTBEAT_TIMEOUT_MS),
          "more than " + SPARK_PREFIX + HEARTBEAT_INTERVAL_MS + " (" + heartbeatIntervalMs + ")");
    }
    if (!v.get(BIND_ADDRESS).trim().isEmpty() && !v.get(BIND_INTERFACE).trim().isEmpty()) {
      throw bad(BIND_INTERFACE, v.get(BIND_INTERFACE), "empty when " + SPARK_PREFIX + BIND_ADDRESS + " is set ("
          + v.get(BIND_ADDRESS).trim() + "): give an address or an interface, not both");
    }
    this.socketBufferBytes = (int) Math.min(Integer.MAX_VALUE, nonNegativeLong(v, SOCKET_BUFFER_BYTES));
    this.ioThreads = (int) Math.min(64, positiveLong(v, IO_THREADS));
    long ch = positiveLong(v, CHANNELS);
    if (ch > 16) {
      throw bad(CHANNELS, v.get(CHANNELS), "from 1 to 16");
    }
    this.channels = (int) ch;
    this.checksum = bool(v, CHECKSUM);
    this.formAtTaskStart = bool(v, FORM_AT_TASK_START);
    this.dataProtection = DataProtection.parse(v.get(DATA_PROTECTION));
    if (dataProtection == null) {
      throw bad(DATA_PROTECTION, v.get(DATA_PROTECTION), "none, authenticate or encrypt");
    }
    String progress = v.get(PROGRESS).trim();
    if (!progress.equalsIgnoreCase("caller") && !progress.equalsIgnoreCase("eventLoop")) {
      throw bad(PROGRESS, progress, "caller or eventLoop");
    }
    this.callerProgress = progress.equalsIgnoreCase("caller");
    this.spinMicros = nonNegativeLong(v, SPIN_MICROS);
    long shm = nonNegativeLong(v, SHARED_MEMORY_BYTES);
    if (shm != 0 && (shm < (1 << 20) || shm > (1 << 30))) {
      throw bad(SHARED_MEMORY_BYTES, v.get(SHARED_MEMORY_BYTES), "0 or from 1048576 to 1073741824");
    }
    this.sharedMemoryBytes = (int) shm;
    this.values = Collections.unmodifiableMap(new LinkedHashMap<>(v));
    if (bool(v, TLS_ENABLED)) {
      for (String k : new String[] {TLS_KEY_STORE, TLS_TRUST_STORE}) {
        if (v.get(k).isBlank()) {
          throw bad(k, "", "a file path when " + SPARK_PREFIX + TLS_ENABLED + " is true");
        }
      }
    }
  }

  /** The raw value of {@code key} (after defaults), for settings read by one component only. */
  public String get(String key) {
    String value = values.get(key);
    if (value == null) {
      throw new CollectiveUsageException("unknown setting '" + key + "'");
    }
    return value;
  }

  public boolean tlsEnabled() {
    return Boolean.parseBoolean(values.get(TLS_ENABLED).trim());
  }

  /** All defaults. */
  public static CollectiveConfig defaults() {
    return from(Collections.emptyMap());
  }

  /** Defaults overridden by {@code settings} (keys without prefix). */
  public static CollectiveConfig from(Map<String, String> settings) {
    Map<String, String> v = new LinkedHashMap<>();
    KEYS.forEach((k, d) -> v.put(k, d[0]));
    for (Map.Entry<String, String> e : settings.entrySet()) {
      if (!KEYS.containsKey(e.getKey())) {
        throw new CollectiveUsageException("unknown setting '" + e.getKey() + "'; known settings: " + KEYS.keySet());
      }
      v.put(e.getKey(), e.getValue());
    }
    return new CollectiveConfig(v);
  }

  /** Every key with its default value, in documentation order. */
  public static Map<String, String> defaultValues() {
    Map<String, String> m = new LinkedHashMap<>();
    KEYS.forEach((k, d) -> m.put(k, d[0]));
    return Collections.unmodifiableMap(m);
  }

  /** Every key with its meaning. */
  public static Map<String, String> documentation() {
    Map<String, String> m = new LinkedHashMap<>();
    KEYS.forEach((k, d) -> m.put(k, d[1]));
    return Collections.unmodifiableMap(m);
  }

  /** First port to try (0: any free port). */
  public int portFrom() {
    return portFrom;
  }

  /** Last port to try (equal to {@link #portFrom()} for a single port). */
  public int portTo() {
    return portTo;
  }

  /** The address to listen on, or empty for the host's own. */
  public String bindAddress() {
    return values.get(BIND_ADDRESS).trim();
  }

  /** The network interface to take the address from; empty for none. */
  public String bindInterface() {
    return values.get(BIND_INTERFACE).trim();
  }

  private static int[] portRange(String value) {
    String s = value == null ? "" : value.trim();
    try {
      int dash = s.indexOf('-');
      int from = Integer.parseInt((dash < 0 ? s : s.substring(0, dash)).trim());
      int to = dash < 0 ? from : Integer.parseInt(s.substring(dash + 1).trim());
      if (from < 0 || to > 65535 || to < from || (from == 0 && to != 0)) {
        throw new NumberFormatException();
      }
      return new int[] {from, to};
    } catch (NumberFormatException | IndexOutOfBoundsException e) {
      throw bad(PORT, value, "0, a port, or a range from-to within 1-65535");
    }
  }

  public long operationTimeoutMs() {
    return operationTimeoutMs;
  }

  /** Largest segment: that of groups whose processes exchange payloads over sockets only. */
  public int segmentBytes() {
    return segmentBytes;
  }

  /**
   * Segment of groups whose ranks share one process or whose executors of one host share memory: the smaller
   * of {@link #LOCAL_SEGMENT_BYTES} and {@link #SEGMENT_BYTES}.
   */
  public int localSegmentBytes() {
    return localSegmentBytes;
  }

  /**
   * Whether connections between executors of one host may carry payloads through shared-memory rings, as far
   * as the settings go (caller progress and a ring size; the directory is each host's own).
   */
  public boolean sharedMemoryPayloads() {
    return callerProgress() && sharedMemoryBytes > 0;
  }

  public Algorithm algorithm() {
    return algorithm;
  }

  /** Most bytes of all ranks' serialised objects in one object collective. */
  public long objectMaxBytes() {
    return objectMaxBytes;
  }

  public long linkMbps() {
    return linkMbps;
  }

  public long stepMicros() {
    return stepMicros;
  }

  public long messageMicros() {
    return messageMicros;
  }

  /** Whether a group outside the table's placements that is not told its link measures it ({@link #MEASURE_LINK}). */
  public boolean measureLink() {
    return measureLink;
  }

  public long directMaxBytes() {
    return directMaxBytes;
  }

  public int directMaxRanks() {
    return directMaxRanks;
  }

  public long ringMinBytes() {
    return ringMinBytes;
  }

  public long broadcastChainMinBytes() {
    return broadcastChainMinBytes;
  }

  public long joinTimeoutMs() {
    return joinTimeoutMs;
  }

  /** Whether a Spark barrier task starts forming its group when it starts (else at its first call). */
  public boolean formAtTaskStart() {
    return formAtTaskStart;
  }

  public long connectTimeoutMs() {
    return connectTimeoutMs;
  }

  public long heartbeatIntervalMs() {
    return heartbeatIntervalMs;
  }

  public long heartbeatTimeoutMs() {
    return heartbeatTimeoutMs;
  }

  public int socketBufferBytes() {
    return socketBufferBytes;
  }

  public int ioThreads() {
    return ioThreads;
  }

  /** Connections per pair of endpoints. */
  public int channels() {
    return channels;
  }

  public boolean checksum() {
    return checksum;
  }

  public DataProtection dataProtection() {
    return dataProtection;
  }

  /**
   * True when waiting threads drive plain TCP connections themselves ({@code transport.progress=caller});
   * TLS connections always stay on the event loops.
   */
  public boolean callerProgress() {
    return callerProgress && !tlsEnabled();
  }

  public long spinMicros() {
    return spinMicros;
  }

  /** Capacity of a same-host connection's shared-memory ring; 0 if payloads always go over the socket. */
  public int sharedMemoryBytes() {
    return sharedMemoryBytes;
  }

  public java.nio.file.Path sharedMemoryDir() {
    return java.nio.file.Path.of(values.get(SHARED_MEMORY_DIR).trim());
  }

  private static long positiveLong(Map<String, String> v, String key) {
    long x = parse(v, key);
    if (x <= 0) {
      throw bad(key, v.get(key), "a positive integer");
    }
    return x;
  }

  private static boolean bool(Map<String, String> v, String key) {
    String s = v.get(key) == null ? "" : v.get(key).trim();
    if (!s.equalsIgnoreCase("true") && !s.equalsIgnoreCase("false")) {
      throw bad(key, v.get(key), "true or false");
    }
    return Boolean.parseBoolean(s);
  }

  private static long nonNegativeLong(Map<String, String> v, String key) {
    long x = parse(v, key);
    if (x < 0) {
      throw bad(key, v.get(key), "a non-negative integer");
    }
    return x;
  }

  private static long parse(Map<String, String> v, String key) {
    String s = v.get(key);
    try {
      return Long.parseLong(s.trim());
    } catch (NumberFormatException | NullPointerException e) {
      throw bad(key, s, "an integer");
    }
  }

  private static CollectiveUsageException bad(String key, String value, String expected) {
    return new CollectiveUsageException(
        "setting '" + SPARK_PREFIX + key + "' is '" + value + "', expected " + expected);
  }
}
