package io.sparkcollective.core.api;

/**
 * A connection was refused during the handshake: wrong shared secret, wrong protocol version, or a peer
 * that did not prove it knows the secret. Check that all ranks run the same build with the same secret.
 */
public class CollectiveAuthenticationException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  public CollectiveAuthenticationException(String message) {
    super(message);
  }
}
