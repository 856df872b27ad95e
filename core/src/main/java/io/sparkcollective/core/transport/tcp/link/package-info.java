/**
 * The seam between I/O engines and the endpoint: a {@code Link} is one authenticated connection to write to;
 * what a link reads goes through the {@code MessageDispatcher} to an {@code Inbound} (DATA payloads to the
 * {@code Receiver} of the rank they are for); a {@code LinkListener} hears of links opening and closing; a
 * {@code SocketAdopter} takes plain sockets over from the engine that authenticated them. {@code IoThread}
 * marks the threads that move bytes (they never block). A new network engine (another protocol than TCP)
 * provides links and a dialler against these interfaces.
 */
package io.sparkcollective.core.transport.tcp.link;
