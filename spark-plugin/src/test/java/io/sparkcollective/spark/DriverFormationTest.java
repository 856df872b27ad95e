package io.sparkcollective.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The driver plugin's group formation as its messages see it: a stage attempt that Spark reports failed
 * (a task failed, an executor of a forming group was lost) answers every JOIN of that attempt with the
 * first failure, now and later, while other attempts form as before.
 */
@Timeout(30)
class DriverFormationTest {
  private CollectiveDriverPlugin driver;

  @BeforeEach
  void registerTwoExecutors() {
    driver = new CollectiveDriverPlugin();
    driver.receive(new Messages.RegisterEndpoint("1", "198.18.0.1:7001").encode());
    driver.receive(new Messages.RegisterEndpoint("2", "198.18.0.2:7001").encode());
  }

  private Messages.JoinReply join(int stage, int attempt, int rank, String executor) {
    String group = "app/stage-" + stage + "/attempt-" + attempt;
    return Messages.JoinReply.decode(driver.receive(new Messages.Join(group, rank, 3, executor, stage, attempt)
        .encode()));
  }

  private Messages.JoinReply why(int stage, int attempt) {
    return Messages.JoinReply.decode(driver.receive(new Messages.Why(stage, attempt).encode()));
  }

  @Test
  void shouldFormAGroupOnceEveryRankAsked() {
    assertNull(join(5, 0, 0, "1").peers);
    assertNull(join(5, 0, 2, "2").peers);
    assertEquals(List.of("198.18.0.1:7001", "198.18.0.2:7001", "198.18.0.2:7001"), join(5, 0, 1, "2").peers);
    assertFalse(why(5, 0).attemptFailed, "no failure is known");
  }

  @Test
  void shouldAnswerEveryJoinOfAFailedAttemptWithItsFirstFailure() {
    assertNull(join(7, 0, 0, "1").peers, "rank 0 waits for its peers");
    driver.attemptFailed(7, 0, 2, false, "task 12 (rank 2) on executor 2 (h2) failed: boom");
    driver.attemptFailed(7, 0, 1, false, "task 13 (rank 1) on executor 1 (h1) failed: TaskKilled");
    Messages.JoinReply again = join(7, 0, 0, "1");
    assertTrue(again.attemptFailed);
    assertEquals(2, again.failedRank, "the first failure is kept");
    assertFalse(again.executorLost);
    assertTrue(again.error.contains("stage 7 attempt 0") && again.error.contains("failed: boom"), again.error);
    // A rank that only asks now (it was still loading its data) gets the same answer at once.
    assertEquals(2, join(7, 0, 1, "2").failedRank);
    assertEquals(2, why(7, 0).failedRank);
    // The retry is a new attempt and forms as usual.
    assertNull(join(7, 1, 0, "1").peers);
    assertFalse(join(7, 1, 1, "1").attemptFailed);
    assertEquals(3, join(7, 1, 2, "2").peers.size());
  }

  @Test
  void shouldFailAFormingGroupWithARankOnALostExecutor() {
    assertNull(join(9, 0, 0, "1").peers);
    assertNull(join(9, 0, 1, "2").peers);
    assertNull(join(3, 0, 0, "1").peers, "a group without ranks on executor 2");
    driver.executorLost("2", "executor 2 was lost: Command exited with code 1");
    Messages.JoinReply reply = join(9, 0, 2, "1");
    assertTrue(reply.attemptFailed && reply.executorLost, String.valueOf(reply.error));
    assertEquals(1, reply.failedRank, "the rank that ran there");
    assertTrue(reply.error.contains("executor 2 was lost") && reply.error.contains("rank 1"), reply.error);
    assertFalse(join(3, 0, 1, "1").attemptFailed, "other groups are not affected");
    // The lost executor's endpoint is forgotten: a JOIN naming it is refused instead of formed with it.
    assertTrue(join(3, 0, 2, "2").error.contains("no collective endpoint"));
  }

  @Test
  void shouldRefuseARankThatDoesNotFitItsGroup() {
    assertNull(join(4, 0, 0, "1").peers);
    String group = "app/stage-4/attempt-0";
    Messages.JoinReply reply = Messages.JoinReply.decode(driver.receive(new Messages.Join(group, 5, 3, "1", 4, 0)
        .encode()));
    assertTrue(reply.error.contains("does not fit"), reply.error);
  }

  @Test
  void shouldRefuseAGroupSizeNoBarrierStageCanHaveBeforeAllocatingForIt() {
    for (int size : new int[] {0, -3, Integer.MAX_VALUE}) {
      Messages.JoinReply reply = Messages.JoinReply.decode(driver.receive(
          new Messages.Join("app/stage-6/attempt-0", 0, size, "1", 6, 0).encode()));
      assertTrue(reply.error.contains("a group of " + size + " ranks"), reply.error);
    }
    assertEquals(0, driver.formingGroups(), "nothing was kept for them");
  }

  @Test
  void shouldRefuseASecondExecutorClaimingARankNamingBoth() {
    assertNull(join(8, 0, 1, "1").peers);
    assertNull(join(8, 0, 1, "1").peers, "the same executor asking again (its poll) is no second claim");
    Messages.JoinReply reply = join(8, 0, 1, "2");
    assertTrue(reply.error.contains("rank 1 of group app/stage-8/attempt-0 is claimed by executor 2, but executor 1 "
        + "joined as it"), reply.error);
    assertNull(join(8, 0, 0, "2").peers);
    assertEquals(List.of("198.18.0.2:7001", "198.18.0.1:7001", "198.18.0.2:7001"), join(8, 0, 2, "2").peers,
        "the first claim stands");
  }
}
