package io.sparkcollective.core.algorithm;

/**
 * A subset of a group's ranks seen as a group of its own: rank {@code i} of the subgroup is rank
 * {@code members[i]} of the group, and steps are shifted by {@code stepBase} so the subgroup's frames cannot
 * be taken for those of another phase of the same operation.
 */
final class SubgroupLinks implements Links {
  private final Links group;
  private final int[] members;
  private final int rank;
  private final int stepBase;

  SubgroupLinks(Links group, int[] members, int stepBase) {
    this.group = group;
    this.members = members;
    this.stepBase = stepBase;
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
    return group.length();
  }

  @Override
  public int segmentElements() {
    return group.segmentElements();
  }

  @Override
  public void send(int peer, int step, int off, int n) {
    group.send(members[peer], stepBase + step, off, n);
  }

  @Override
  public void recvReduce(int peer, int step, int off, int n) {
    group.recvReduce(members[peer], stepBase + step, off, n);
  }

  @Override
  public void recvCopy(int peer, int step, int off, int n) {
    group.recvCopy(members[peer], stepBase + step, off, n);
  }

  @Override
  public void stash(int off, int n) {
    group.stash(off, n);
  }

  @Override
  public void copyFromStash(int off, int n) {
    group.copyFromStash(off, n);
  }

  @Override
  public void reduceFromStash(int off, int n) {
    group.reduceFromStash(off, n);
  }

  @Override
  public void roundToWire(int off, int n) {
    group.roundToWire(off, n);
  }
}
