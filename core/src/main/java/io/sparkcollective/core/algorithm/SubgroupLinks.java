package io.sparkcollective.core.algorithm;

/**
 * A subset of a group's ranks, working on a window of the vector, seen as a group of its own: rank {@code i}
 * of the subgroup is rank {@code members[i]} of the group, element {@code e} is element {@code base + e} of
 * the vector ({@code length} of them), and steps are shifted by {@code stepBase} so the subgroup's frames
 * cannot be taken for those of another phase of the same operation.
 */
final class SubgroupLinks implements Links {
  private final Links group;
  private final int[] members;
  private final int rank;
  private int stepBase;
  private int base;
  private int length;

  SubgroupLinks(Links group, int[] members, int stepBase) {
    this(group, members, stepBase, 0, group.length());
  }

  SubgroupLinks(Links group, int[] members, int stepBase, int base, int length) {
    this.group = group;
    this.members = members;
    this.stepBase = stepBase;
    this.base = base;
    this.length = length;
    int me = -1;
    for (int i = 0; i < members.length; i++) {
      if (members[i] == group.rank()) {
        me = i;
      }
    }
    if (me < 0) {
      throw new IllegalArgumentException("rank " + group.rank() + " is not in the subgroup");
    }
    this.rank = me;
  }

  /**
   * Moves this view to another window and step range (passes over consecutive pieces reuse one view instead of
   * allocating one per piece); the caller's thread only, between the moves it makes.
   */
  SubgroupLinks window(int stepBase, int base, int length) {
    this.stepBase = stepBase;
    this.base = base;
    this.length = length;
    return this;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return members.length;
  }

  @Override
  public int length() {
    return length;
  }

  @Override
  public int segmentElements() {
    return group.segmentElements();
  }

  @Override
  public void send(int peer, int step, int off, int n) {
    group.send(members[peer], stepBase + step, base + off, n);
  }

  @Override
  public void recvReduce(int peer, int step, int off, int n) {
    group.recvReduce(members[peer], stepBase + step, base + off, n);
  }

  @Override
  public void recvReduceFinal(int peer, int step, int off, int n) {
    group.recvReduceFinal(members[peer], stepBase + step, base + off, n);
  }

  @Override
  public void recvCopy(int peer, int step, int off, int n) {
    group.recvCopy(members[peer], stepBase + step, base + off, n);
  }

  @Override
  public void recvCopySend(int peer, int step, int off, int n, int to, int nextStep) {
    group.recvCopySend(members[peer], stepBase + step, base + off, n, members[to], stepBase + nextStep);
  }

  @Override
  public void expectCopy(int peer, int step, int off, int n) {
    group.expectCopy(members[peer], stepBase + step, base + off, n);
  }

  @Override
  public void stash(int off, int n) {
    group.stash(base + off, n);
  }

  @Override
  public void copyFromStash(int off, int n) {
    group.copyFromStash(base + off, n);
  }

  @Override
  public void reduceFromStash(int off, int n) {
    group.reduceFromStash(base + off, n);
  }

  @Override
  public void reduceFromStashFinal(int off, int n) {
    group.reduceFromStashFinal(base + off, n);
  }

  @Override
  public void roundToWire(int off, int n) {
    group.roundToWire(base + off, n);
  }

  @Override
  public void roundToWireOnMove(int off, int n) {
    group.roundToWireOnMove(base + off, n);
  }

  @Override
  public void settleWire(int off, int n) {
    group.settleWire(base + off, n);
  }
}
