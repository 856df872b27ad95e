/**
 * Caller-driven I/O: plain sockets taken over once authenticated, read by the application threads that wait
 * for frames (and a progress thread when none does), written by senders directly; payloads read straight
 * into frames or lent from a shared-memory ring.
 */
package io.sparkcollective.core.transport.tcp.direct;
