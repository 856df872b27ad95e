package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.TcpCluster;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkKeys;
import io.sparkcollective.core.transport.tcp.link.MessageTags;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import io.sparkcollective.core.transport.tcp.shm.RingLayout;
import io.sparkcollective.core.transport.tcp.shm.SharedMemoryRing;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * DATA records in a shared-memory ring, written by a peer of this host that is authenticated (its socket
 * carries its sealed ring offer and wake-ups) but writes its ring by hand: a well-formed record reaches its
 * rank, rung awake or not; anything else in the ring ends the connection, leaving no frame behind.
 */
@Timeout(120)
class SharedMemoryRecordsTest {
  private static final int CAPACITY = 1 << 20;

  private TcpEndpoint endpoint;
  private ServerSocketChannel listener;
  private TcpTransport[] group;

  private static LinkKeys keys(boolean dialler) {
    return LinkKeys.of(new SecretHandshake(TcpCluster.SECRET), new byte[16], dialler, DataProtection.NONE);
  }

  @BeforeEach
  void start() throws Exception {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.JOIN_TIMEOUT_MS, "5000",
        CollectiveConfig.SEGMENT_BYTES, "65536"));
    endpoint = TcpEndpoint.start("127.0.0.1", 0, TcpCluster.SECRET, config);
    listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    group = FuzzGroup.form(endpoint, null);
  }

  @AfterEach
  void stop() throws Exception {
    for (TcpTransport t : group) {
      t.close();
    }
    endpoint.close();
    listener.close();
  }

  /** A peer of this host with its ring mapped by the endpoint, and the test's own mapping of that ring. */
  private final class Peer implements AutoCloseable {
    final SocketChannel socket;
    final Link link;
    final SharedMemoryRing ring;
    final MappedByteBuffer raw;
    /** The peer's keys: it dialled the endpoint, and each side opens what the other seals (in order). */
    final LinkKeys keys = keys(true);

    Peer() throws Exception {
      socket = SocketChannel.open(listener.getLocalAddress());
      // Claims the endpoint's own address, where the group's ranks are: its frames are admitted.
      link = endpoint.callerIo().adopt(listener.accept(), endpoint.addressKey(), false, keys(false));
      ring = SharedMemoryRing.create(endpoint.config().sharedMemoryDir(), CAPACITY);
      try (FileChannel ch = FileChannel.open(ring.path(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
        raw = ch.map(FileChannel.MapMode.READ_WRITE, 0, RingLayout.fileBytes(CAPACITY));
      }
      raw.order(ByteOrder.nativeOrder());
      send(ControlMessages.sharedMemoryOffer(UnpooledByteBufAllocator.DEFAULT, ring.token(), CAPACITY,
          ring.path().getFileName().toString()));
      assertTrue(await(ring::attached), "the endpoint did not map the offered ring");
    }

    void send(ByteBuf msg) throws Exception {
      MessageTags.seal(msg, keys.outgoing);
      ByteBuffer b = msg.nioBuffer();
      while (b.hasRemaining()) {
        socket.write(b);
      }
      msg.release();
    }

    /** Puts {@code message} into the ring as a record, and rings the endpoint if a thread of it is blocked. */
    void record(ByteBuf message) throws Exception {
      ByteBuffer b = message.nioBuffer();
      assertTrue(ring.putRecord(b, b.position(), b.remaining(), 0), "no room in a fresh ring");
      if (ring.wakeReceiver()) {
        send(ControlMessages.sharedMemoryWake(UnpooledByteBufAllocator.DEFAULT));
      }
    }

    @Override
    public void close() throws Exception {
      socket.close();
      ring.close();
    }
  }

  /** A DATA message from rank 1 to rank 0 of the group with an 8-byte payload; {@code edit} may break it. */
  private ByteBuf data(Consumer<ByteBuf> edit) {
    ByteBuf m = Unpooled.buffer(DataHeader.BYTES + 8).order(ByteOrder.LITTLE_ENDIAN);
    m.writeZero(DataHeader.BYTES + 8);
    m.setIntLE(DataHeader.LENGTH_OFFSET, DataHeader.BYTES + 8 - WireFormat.LENGTH_FIELD_BYTES);
    m.setByte(DataHeader.TYPE_OFFSET, WireFormat.DATA);
    m.setIntLE(DataHeader.SOURCE_OFFSET, 1);
    m.setIntLE(DataHeader.DEST_OFFSET, 0);
    m.setLongLE(DataHeader.GROUP_OFFSET, group[0].groupId());
    m.setLongLE(DataHeader.SEQ_OFFSET, 77);
    m.setLongLE(DataHeader.BYTES, 0x0123456789abcdefL);
    edit.accept(m);
    return m;
  }

  private static boolean await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      Thread.sleep(1);
    }
    return true;
  }

  @Test
  void shouldDeliverWellFormedRecordsWhetherOrNotTheReceiverWasBlocked() throws Exception {
    try (Peer peer = new Peer()) {
      // Nobody waits for frames here: the endpoint's progress thread blocks in its poll, so this one rings it.
      Thread.sleep(50);
      peer.record(data(m -> { }));
      assertTrue(await(() -> group[0].queuedFrames() == 1), "the record did not reach rank 0");
      peer.record(data(m -> m.setLongLE(DataHeader.SEQ_OFFSET, 78)));
      assertTrue(await(() -> group[0].queuedFrames() == 2), "the second record did not reach rank 0");
      assertTrue(endpoint.sharedMemoryWakeups() > 0, "the blocked endpoint was not rung");
      assertTrue(peer.link.isActive());
      assertEquals(2, endpoint.outstandingFrames());
    }
  }

  @Test
  void shouldCloseTheConnectionOnARecordThatIsNotADataMessage() throws Exception {
    assertBreachCloses(peer -> peer.record(Unpooled.buffer().writeIntLE(65).writeByte(WireFormat.HEARTBEAT)
        .writeZero(64)));
  }

  @Test
  void shouldCloseTheConnectionOnARecordShorterThanADataHeader() throws Exception {
    assertBreachCloses(peer -> peer.record(Unpooled.buffer().writeIntLE(12).writeByte(WireFormat.DATA)
        .writeZero(11)));
  }

  @Test
  void shouldCloseTheConnectionOnARecordThatPointsIntoTheRing() throws Exception {
    assertBreachCloses(peer -> peer.record(data(m -> m.setByte(DataHeader.FLAGS_OFFSET,
        DataHeader.FLAG_SHARED_MEMORY))));
  }

  @Test
  void shouldCloseTheConnectionWhenThePublishedEndRunsPastTheRing() throws Exception {
    assertBreachCloses(peer -> {
      peer.raw.putLong(RingLayout.PUBLISHED_AT, 3L * CAPACITY);
      peer.send(ControlMessages.sharedMemoryWake(UnpooledByteBufAllocator.DEFAULT));
    });
  }

  private interface Breach {
    void apply(Peer peer) throws Exception;
  }

  private void assertBreachCloses(Breach breach) throws Exception {
    try (Peer peer = new Peer()) {
      breach.apply(peer);
      assertTrue(await(() -> !peer.link.isActive()), "the connection stayed open");
      assertEquals(0, group[0].queuedFrames() + group[1].queuedFrames());
      assertEquals(0, endpoint.outstandingFrames(), "a frame was left behind");
    }
  }
}
