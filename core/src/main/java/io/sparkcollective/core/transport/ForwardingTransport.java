package io.sparkcollective.core.transport;

import io.sparkcollective.core.api.CollectiveException;

/** A transport that passes every call to another; wrappers override what they change. */
public abstract class ForwardingTransport implements Transport {
  protected final Transport delegate;

  protected ForwardingTransport(Transport delegate) {
    this.delegate = delegate;
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
  public int[] nodes() {
    return delegate.nodes();
  }

  @Override
  public boolean memoryToAll() {
    return delegate.memoryToAll();
  }

  @Override
  public String describe(int rank) {
    return delegate.describe(rank);
  }

  @Override
  public LinkReceipts receipts() {
    return delegate.receipts();
  }

  @Override
  public Frame acquire(int payloadBytes) {
    return delegate.acquire(payloadBytes);
  }

  @Override
  public Frame acquireFor(int peer, int payloadBytes) {
    return delegate.acquireFor(peer, payloadBytes);
  }

  @Override
  public void release(Frame frame) {
    delegate.release(frame);
  }

  @Override
  public boolean oneHost() {
    return delegate.oneHost();
  }

  @Override
  public boolean socketsOnly() {
    return delegate.socketsOnly();
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
  public CollectiveException departure() {
    return delegate.departure();
  }

  @Override
  public void disconnect(int peer, String reason) {
    delegate.disconnect(peer, reason);
  }

  @Override
  public void operationBegins() {
    delegate.operationBegins();
  }

  @Override
  public void operationEnds() {
    delegate.operationEnds();
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
