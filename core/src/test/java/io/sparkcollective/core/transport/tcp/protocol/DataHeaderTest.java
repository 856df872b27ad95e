package io.sparkcollective.core.transport.tcp.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.FramePool;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The DATA header: the layout as drawn, and what the writer puts in is what both readers take out. */
@Timeout(10)
class DataHeaderTest {

  @Test
  void shouldLayOutTheFieldsAtTheOffsetsTheDrawingShows() {
    int[] drawn = {0, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 24, 32, 40, 48, 56, 60, 64};
    int[] actual = {DataHeader.LENGTH_OFFSET, DataHeader.TYPE_OFFSET, DataHeader.KIND_OFFSET, DataHeader.DTYPE_OFFSET,
        DataHeader.OP_OFFSET, DataHeader.ALGORITHM_OFFSET, DataHeader.FLAGS_OFFSET, DataHeader.STREAM_OFFSET,
        DataHeader.SOURCE_OFFSET, DataHeader.DEST_OFFSET, DataHeader.STEP_OFFSET, DataHeader.GROUP_OFFSET,
        DataHeader.SEQ_OFFSET, DataHeader.COUNT_OFFSET, DataHeader.ELEMENT_OFFSET_OFFSET, DataHeader.ROOT_OFFSET,
        DataHeader.CRC_OFFSET, DataHeader.BYTES};
    assertEquals(java.util.Arrays.toString(drawn), java.util.Arrays.toString(actual));
    assertEquals(12, DataHeader.SHARED_DESCRIPTOR_BYTES);
  }

  @Test
  void shouldReadBackEveryFieldItWroteFromBothBufferKinds() {
    FramePool pool = new FramePool(1 << 16, DataHeader.BYTES, 16);
    Frame f = pool.acquire(24);
    // Values with their high bits set, so a sign or width error shows.
    f.header(0xF1, 0xFFEE, 0x7A6B5C4D3E2F1001L, 0x7FFF0001, 3, 0xF2, 0xF3, 0x7EEE0002, 0xF4, 0x7000000000000003L,
        0x6000000000000004L);
    ByteBuf out = Unpooled.buffer(DataHeader.BYTES + 24);
    DataHeader.write(out, f, 0x7DDD0005, 0x7CCC0006, 0x8BADF00DCAFEBABEL, DataHeader.FLAG_CRC32C, 0x9ABCDEF0, 24);
    assertEquals(DataHeader.BYTES + 24, out.writerIndex());
    assertEquals(DataHeader.BYTES + 24 - WireFormat.LENGTH_FIELD_BYTES, out.getIntLE(0), "length counts type on");
    assertEquals(WireFormat.DATA, out.getByte(WireFormat.TYPE_OFFSET));
    ByteBuffer nio = ByteBuffer.allocate(DataHeader.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    out.getBytes(0, nio);
    for (DataHeader h : new DataHeader[] {new DataHeader().read(out, 0), new DataHeader().read(nio, 0)}) {
      assertEquals(0xF1, h.kind());
      assertEquals(0xFFEE, h.stream());
      assertEquals(0x7A6B5C4D3E2F1001L, h.seq());
      assertEquals(0x7FFF0001, h.step());
      assertEquals(0x7DDD0005, h.source(), "the sender's rank, not the frame's");
      assertEquals(0x7CCC0006, h.dest());
      assertEquals(0xF2, h.dtype());
      assertEquals(0xF3, h.op());
      assertEquals(0x7EEE0002, h.root());
      assertEquals(0xF4, h.algorithm());
      assertEquals(0x7000000000000003L, h.count());
      assertEquals(0x6000000000000004L, h.offset());
      assertEquals(0x8BADF00DCAFEBABEL, h.group());
      assertEquals(DataHeader.FLAG_CRC32C, h.flags());
      assertEquals(0x9ABCDEF0, h.crc());
      Frame g = pool.acquire(0);
      h.copyTo(g);
      assertEquals(0x7DDD0005, g.source());
      assertEquals(f.seq(), g.seq());
      assertEquals(f.offset(), g.offset());
      pool.release(g);
    }
    pool.release(f);
  }
}
