/**
 * The wire: message framing and types ({@code WireFormat}), the DATA header ({@code DataHeader}, a reusable
 * view with offsets derived from each other) and the other messages ({@code ControlMessages}, their writers
 * and one decoder). Knows nothing of connections, threads or groups.
 */
package io.sparkcollective.core.transport.tcp.protocol;
