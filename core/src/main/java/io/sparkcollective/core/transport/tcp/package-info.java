/**
 * The TCP transport. This package is the endpoint, the one thing the rest of the library uses:
 * {@link io.sparkcollective.core.transport.tcp.TcpEndpoint} (one per process: listens, joins groups, owns the
 * parts below), {@link io.sparkcollective.core.transport.tcp.TcpTransport} (one rank's view of a group),
 * the {@code GroupRegistry} (which rank each received message is for) and the {@code Connections} (one per
 * remote endpoint and channel, made on first use and shared by every group).
 *
 * <p>Sub-packages, each a concern with a narrow seam, depending only downward:
 * <pre>
 *   tcp (endpoint)  ->  pipeline (Netty: listen, dial, handshake, TLS)  ->  link  ->  protocol
 *                   ->  direct (caller-driven sockets)                  ->  link, shm, protocol
 * </pre>
 * {@code protocol} draws the bytes on the wire; {@code link} is the seam every I/O engine plugs into
 * (a {@code Link} to write, an {@code Inbound} that received messages go to, the {@code MessageDispatcher});
 * {@code shm} is the shared-memory payload ring. A frame received travels: socket -> link (pipeline's
 * MessageHandler or direct's reader) -> MessageDispatcher -> Inbound (the registry) -> the rank's Receiver
 * -> its Inbox.
 */
package io.sparkcollective.core.transport.tcp;
