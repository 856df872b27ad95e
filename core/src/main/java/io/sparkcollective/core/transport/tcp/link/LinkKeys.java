package io.sparkcollective.core.transport.tcp.link;

import io.sparkcollective.core.auth.MessageAuthenticator;
import io.sparkcollective.core.auth.SecretHandshake;

/** The message authenticators of one authenticated connection: one for what it sends, one for what it reads. */
public final class LinkKeys {
  public final MessageAuthenticator outgoing;
  public final MessageAuthenticator incoming;

  private LinkKeys(MessageAuthenticator outgoing, MessageAuthenticator incoming) {
    this.outgoing = outgoing;
    this.incoming = incoming;
  }

  /** The keys of the connection whose handshake had {@code transcript}, for the side that dialled or listened. */
  public static LinkKeys of(SecretHandshake handshake, byte[] transcript, boolean dialler) {
    return new LinkKeys(new MessageAuthenticator(handshake.directionKey(transcript, dialler)),
        new MessageAuthenticator(handshake.directionKey(transcript, !dialler)));
  }
}
