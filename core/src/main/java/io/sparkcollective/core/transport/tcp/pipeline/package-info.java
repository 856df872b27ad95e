/**
 * Netty's side of the endpoint: event loops, the listening socket, dialling, and each connection's pipeline
 * (TLS, frame decoder, idle timer, handshake, then message reading or hand-over to caller-driven I/O).
 * The only package that sees Netty channels.
 */
package io.sparkcollective.core.transport.tcp.pipeline;
