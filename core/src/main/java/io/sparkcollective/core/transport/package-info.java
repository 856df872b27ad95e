/**
 * The contract between the engine and the network: {@link io.sparkcollective.core.transport.Transport}
 * moves pooled {@link io.sparkcollective.core.transport.Frame}s between ranks and keeps the group's
 * failure state; {@link io.sparkcollective.core.transport.Inbox} is the shared receive side. Implementations
 * live in sub-packages.
 */
package io.sparkcollective.core.transport;
