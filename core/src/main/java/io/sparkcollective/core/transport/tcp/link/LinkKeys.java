package io.sparkcollective.core.transport.tcp.link;

import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.auth.SecretHandshake;

/** The sealers of one authenticated connection: one for what it sends, one for what it reads. */
public final class LinkKeys {
  public final MessageSealer outgoing;
  public final MessageSealer incoming;

  private LinkKeys(MessageSealer outgoing, MessageSealer incoming) {
    this.outgoing = outgoing;
    this.incoming = incoming;
  }

  /**
   * The sealers of the connection whose handshake had {@code transcript}, for the side that dialled or listened,
   * with the {@code protection} both sides agreed on.
   */
  public static LinkKeys of(SecretHandshake handshake, byte[] transcript, boolean dialler, DataProtection protection) {
    return new LinkKeys(handshake.sealer(transcript, dialler, protection),
        handshake.sealer(transcript, !dialler, protection));
  }
}
