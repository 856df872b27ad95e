package io.sparkcollective.core.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveOptions;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.api.Communicator;
import io.sparkcollective.core.api.DType;
import io.sparkcollective.core.api.DataBuffer;
import io.sparkcollective.core.api.ReduceOp;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.testing.GroupHarness;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Every argument error gives a clear usage exception on the calling rank and leaves the group usable. */
@Timeout(120)
class UsageErrorsTest {

  interface BadCall {
    void run(Communicator c);
  }

  static Stream<Arguments> badCalls() {
    return Stream.of(
        Arguments.of("float[] is null", (BadCall) c -> c.allReduce((float[]) null, ReduceOp.SUM)),
        Arguments.of("reduce op is null", (BadCall) c -> c.allReduce(new float[3], null)),
        Arguments.of("do not fit in float[] of length 4", (BadCall) c -> c.allReduce(new float[4], 2, 3, ReduceOp.SUM)),
        Arguments.of("offset -1", (BadCall) c -> c.allReduce(new double[4], -1, 2, ReduceOp.SUM)),
        Arguments.of("options are null", (BadCall) c -> c.allReduce(DataBuffer.of(new int[1]), ReduceOp.SUM, null)),
        Arguments.of("root 5 is not a rank of this group of 3", (BadCall) c -> c.broadcast(new float[1], 5)),
        Arguments.of("root -1 is not a rank", (BadCall) c -> c.broadcast(new float[1], -1)),
        Arguments.of("peer 7 is not a rank", (BadCall) c -> c.send(new float[1], 7)),
        Arguments.of("is this rank itself", (BadCall) c -> c.recv(new float[1], c.rank())),
        Arguments.of("recv holds 5 elements but must hold size (3) x send (2) = 6",
            (BadCall) c -> c.allGather(new float[2], new float[5])),
        Arguments.of("send is F32 but recv is I64",
            (BadCall) c -> c.allGather(DataBuffer.of(new float[1]), DataBuffer.of(new long[3]))),
        Arguments.of("not a multiple of F16's 2",
            (BadCall) c -> c.allReduce(DataBuffer.of(ByteBuffer.allocateDirect(5), DType.F16), ReduceOp.SUM)),
        Arguments.of("read-only", (BadCall) c ->
            c.allReduce(DataBuffer.of(ByteBuffer.allocate(8).asReadOnlyBuffer(), DType.F32), ReduceOp.SUM)),
        Arguments.of("DType is null", (BadCall) c -> c.allReduce(DataBuffer.of(ByteBuffer.allocate(8), null),
            ReduceOp.SUM)),
        Arguments.of("tag must be in [0, 64)", (BadCall) c -> CollectiveOptions.DEFAULT.withTag(64)),
        Arguments.of("timeout must be positive", (BadCall) c -> CollectiveOptions.DEFAULT.withTimeout(Duration.ZERO)),
        Arguments.of("cannot serialise", (BadCall) c -> c.allGatherObjects(new Thread())));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badCalls")
  void shouldRejectBadArgumentsClearlyAndKeepTheGroupUsable(String message, BadCall call) {
    LocalGroup group = LocalGroup.create(3);
    try {
      GroupHarness.run(group, Duration.ofSeconds(30), comm -> {
        if (comm.rank() == 1) {
          CollectiveUsageException e = assertThrows(CollectiveUsageException.class, () -> call.run(comm));
          assertTrue(e.getMessage().contains(message), "message '" + e.getMessage() + "' should say '" + message + "'");
          assertTrue(e.groupUsable());
        }
        float[] data = {comm.rank()};
        comm.allReduce(data, ReduceOp.SUM);
        assertArrayEquals(new float[] {3}, data, "the group still works after the argument error");
        return null;
      });
    } finally {
      GroupHarness.closeAll(group);
    }
  }

  @Test
  void shouldRejectCallsAfterCloseAndUnknownSettings() {
    LocalGroup group = LocalGroup.create(2);
    GroupHarness.closeAll(group);
    Communicator c = group.communicator(0);
    assertMessage("communicator is closed", () -> c.allReduce(new float[1], ReduceOp.SUM));
    assertMessage("communicator is closed", c::checkHealth);
    c.close();
    assertMessage("unknown setting 'segmentSize'", () -> CollectiveConfig.from(Map.of("segmentSize", "1")));
    assertMessage("'spark.collective.segmentBytes' is '1000', expected a power of two",
        () -> CollectiveConfig.from(Map.of(CollectiveConfig.SEGMENT_BYTES, "1000")));
    assertMessage("'spark.collective.operation.timeoutMs' is 'soon', expected an integer",
        () -> CollectiveConfig.from(Map.of(CollectiveConfig.OPERATION_TIMEOUT_MS, "soon")));
    assertMessage("'spark.collective.algorithm' is 'TREE', expected one of",
        () -> CollectiveConfig.from(Map.of(CollectiveConfig.ALGORITHM, "TREE")));
  }

  private static void assertMessage(String expected, Executable call) {
    CollectiveUsageException e = assertThrows(CollectiveUsageException.class, call);
    assertTrue(e.getMessage().contains(expected), "message '" + e.getMessage() + "' should say '" + expected + "'");
  }
}
