package io.sparkcollective.core.testing;

import io.sparkcollective.core.api.CollectiveException;
import io.sparkcollective.core.transport.CallSignature;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.Transport;

/** An in-JVM transport that reports a given rank-to-process map, to place ranks on "executors" in tests. */
public final class NodeMapTransport implements Transport {
  private final Transport delegate;
  private final int[] nodes;

  public NodeMapTransport(Transport delegate, int[] nodes) {
    this.delegate = delegate;
    this.nodes = nodes.clone();
  }

  @Override
  public int[] nodes() {
    return nodes.clone();
  }

  @Override
  public int rank() {
    return delegate.rank();
  }

  @Override
  public int size() {
    return delegate.size();
  }

  @Override
  public String describe(int rank) {
    return delegate.describe(rank);
  }

  @Override
  public Frame acquire(int payloadBytes) {
    return delegate.acquire(payloadBytes);
  }

  @Override
  public void release(Frame frame) {
    delegate.release(frame);
  }

  @Override
  public int maxFrameBytes() {
    return delegate.maxFrameBytes();
  }

  @Override
  public void send(int peer, Frame frame) {
    delegate.send(peer, frame);
  }

  @Override
  public Frame receive(int peer, int stream, long seq, long deadlineNanos) {
    return delegate.receive(peer, stream, seq, deadlineNanos);
  }

  @Override
  public String findDisagreement(int stream, long seq, int except, CallSignature call) {
    return delegate.findDisagreement(stream, seq, except, call);
  }

  @Override
  public void abort(CollectiveException cause) {
    delegate.abort(cause);
  }

  @Override
  public CollectiveException failure() {
    return delegate.failure();
  }

  @Override
  public void disconnect(int peer, String reason) {
    delegate.disconnect(peer, reason);
  }

  @Override
  public long nanoTime() {
    return delegate.nanoTime();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
