/**
 * The shared-memory payload ring of a same-host connection: its file layout and placement arithmetic
 * ({@code RingLayout}) and the mapped ring itself ({@code SharedMemoryRing}). Knows nothing of sockets.
 */
package io.sparkcollective.core.transport.tcp.shm;
