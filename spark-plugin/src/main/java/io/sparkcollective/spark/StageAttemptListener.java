package io.sparkcollective.spark;

import org.apache.spark.ExecutorLostFailure;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.TaskInfo;

/**
 * The driver plugin's view of Spark's scheduler: tells {@link CollectiveDriverPlugin} as soon as a stage
 * attempt can no longer complete as a barrier group (one of its tasks failed or was killed, the attempt
 * failed or was cancelled) and when an executor is lost, so that ranks still waiting for their group get
 * the reason at once instead of waiting for the join timeout. Runs on Spark's listener bus thread.
 */
final class StageAttemptListener extends SparkListener {
  private final CollectiveDriverPlugin plugin;

  StageAttemptListener(CollectiveDriverPlugin plugin) {
    this.plugin = plugin;
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    if (end.reason() instanceof TaskFailedReason) {
      TaskInfo t = end.taskInfo();
      plugin.attemptFailed(end.stageId(), end.stageAttemptId(), t.partitionId(),
          end.reason() instanceof ExecutorLostFailure, "task " + t.taskId()
          + " (rank " + t.partitionId() + ") on executor " + t.executorId() + " (" + t.host() + ") failed: "
          + firstLine(((TaskFailedReason) end.reason()).toErrorString()));
    }
  }

  @Override
  public void onStageCompleted(SparkListenerStageCompleted completed) {
    if (completed.stageInfo().failureReason().isDefined()) {
      plugin.attemptFailed(completed.stageInfo().stageId(), completed.stageInfo().attemptNumber(), -1, false,
          "the stage attempt failed: " + firstLine(completed.stageInfo().failureReason().get()));
    }
  }

  @Override
  public void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
    plugin.executorLost(removed.executorId(), "executor " + removed.executorId() + " was lost: "
        + firstLine(removed.reason()));
  }

  private static final String PYTHON_TRACEBACK = "Traceback (most recent call last):";

  /**
   * The line of a failure that says what went wrong: its first (the rest is a stack trace, which belongs in
   * the task's own log), or for a Python task's exception what it raised.
   */
  static String firstLine(String error) {
    if (error == null) {
      return "no reason given";
    }
    String[] lines = error.split("\n");
    String first = lines[0].trim();
    if (first.endsWith(PYTHON_TRACEBACK)) {
      // A Python worker's exception: the traceback's last line (before the JVM's frames) says what was raised.
      String raised = null;
      for (int i = 1; i < lines.length && !lines[i].startsWith("\tat "); i++) {
        if (!lines[i].isBlank() && !Character.isWhitespace(lines[i].charAt(0))) {
          raised = lines[i].trim();
        }
      }
      if (raised != null) {
        return first.substring(0, first.length() - PYTHON_TRACEBACK.length()) + raised;
      }
    }
    return first;
  }
}
