package io.sparkcollective.core.testing;

import io.sparkcollective.core.transport.ForwardingTransport;
import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.Transport;
import java.util.function.Consumer;

/** A transport that shows every frame it sends to an observer first (the frame's header and payload as sent). */
public final class SendTap extends ForwardingTransport {
  private final Consumer<Frame> observer;

  public SendTap(Transport delegate, Consumer<Frame> observer) {
    super(delegate);
    this.observer = observer;
  }

  @Override
  public void send(int peer, Frame frame) {
    observer.accept(frame);
    super.send(peer, frame);
  }
}
