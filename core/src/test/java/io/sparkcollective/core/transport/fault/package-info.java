/**
 * A transport wrapper that drops, delays or breaks links by a (seeded) policy, for failure tests of every
 * algorithm over any transport.
 */
package io.sparkcollective.core.transport.fault;
