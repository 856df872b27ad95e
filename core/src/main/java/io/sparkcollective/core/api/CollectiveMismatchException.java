package io.sparkcollective.core.api;

/**
 * Two ranks called different things at the same point of the sequence: another operation, length, type,
 * reduction or root. The message names both ranks and what differed.
 */
public class CollectiveMismatchException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  public CollectiveMismatchException(String message) {
    super(message);
  }
}
