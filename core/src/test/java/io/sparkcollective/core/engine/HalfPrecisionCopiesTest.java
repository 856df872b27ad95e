package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import io.sparkcollective.core.testing.NodeMapTransport;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Broadcast, all-gather and send/recv of F16 and BF16 buffers deliver every one of the 65 536 bit patterns
 * unchanged (signalling NaNs and NaN payloads included), whatever the buffers' byte order and form (direct or
 * heap little-endian, heap big-endian, mixed in one group), between ranks of one process (read in place) and
 * of different processes (through frames). The reference is the bit patterns themselves.
 */
@Timeout(120)
class HalfPrecisionCopiesTest {
  private static final int N = 1 << 16;
  private static final Duration LIMIT = Duration.ofSeconds(60);

  static List<Arguments> cases() {
    List<Arguments> c = new java.util.ArrayList<>();
    for (DType t : new DType[] {DType.F16, DType.BF16}) {
      c.add(Arguments.of(t, new int[] {0, 0, 0}));
      c.add(Arguments.of(t, new int[] {0, 1, 2}));
      c.add(Arguments.of(t, new int[] {0, 0, 1, 1}));
    }
    return c;
  }

  /** Rank r's buffer form: direct little-endian, heap little-endian, heap big-endian in turn. */
  private static ByteBuffer buffer(int rank, int elements) {
    switch (rank % 3) {
      case 0:
        return ByteBuffer.allocateDirect(2 * elements).order(ByteOrder.LITTLE_ENDIAN);
      case 1:
        return ByteBuffer.allocate(2 * elements).order(ByteOrder.LITTLE_ENDIAN);
      default:
        return ByteBuffer.allocate(2 * elements).order(ByteOrder.BIG_ENDIAN);
    }
  }

  /** Element i of rank r's pattern: every 16-bit value once, rotated by rank. */
  private static short pattern(int rank, int i) {
    return (short) (i + 4099 * rank);
  }

  @ParameterizedTest(name = "{0} on processes {1}")
  @MethodSource("cases")
  void shouldCopyEveryBitPatternUnchanged(DType dtype, int[] nodes) {
    int n = nodes.length;
    LocalGroup group = LocalGroup.create(n, CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "4096")),
        t -> new NodeMapTransport(t, nodes));
    try {
      List<String> problems = GroupHarness.run(group, LIMIT, comm -> {
        int r = comm.rank();
        StringBuilder bad = new StringBuilder();
        ByteBuffer b = buffer(r, N);
        for (int i = 0; i < N; i++) {
          b.putShort(2 * i, pattern(r, i));
        }
        comm.broadcast(DataBuffer.of(b, dtype), 1);
        check(bad, "broadcast", b, 0, 1, N);
        ByteBuffer mine = buffer(r + 1, N);
        for (int i = 0; i < N; i++) {
          mine.putShort(2 * i, pattern(r, i));
        }
        ByteBuffer all = buffer(r + 2, N * n);
        comm.allGather(DataBuffer.of(mine, dtype), DataBuffer.of(all, dtype));
        for (int k = 0; k < n; k++) {
          check(bad, "all-gather block " + k, all, k * N, k, N);
        }
        ByteBuffer p = buffer(r, N);
        if (r == 0) {
          for (int i = 0; i < N; i++) {
            p.putShort(2 * i, pattern(0, i));
          }
          comm.send(DataBuffer.of(p, dtype), n - 1, CollectiveOptions.DEFAULT);
        } else if (r == n - 1) {
          comm.recv(DataBuffer.of(p, dtype), 0, CollectiveOptions.DEFAULT);
          check(bad, "recv", p, 0, 0, N);
        }
        return bad.toString();
      });
      for (int r = 0; r < n; r++) {
        assertEquals("", problems.get(r), "rank " + r);
      }
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  private static void check(StringBuilder bad, String what, ByteBuffer b, int at, int source, int count) {
    for (int i = 0; i < count; i++) {
      short got = b.getShort(2 * (at + i));
      short want = pattern(source, i);
      if (got != want) {
        bad.append(what).append(": element ").append(i).append(" is 0x").append(Integer.toHexString(got & 0xffff))
            .append(", sent 0x").append(Integer.toHexString(want & 0xffff)).append("; ");
        return;
      }
    }
  }
}
