/**
 * Collective algorithms as pure logic over {@link io.sparkcollective.core.algorithm.Links}: ring, direct
 * and halving-doubling all-reduce, ring reduce-scatter and all-gather, broadcast, barrier, and the
 * {@link io.sparkcollective.core.algorithm.AlgorithmSelector} that picks by size. No sockets, frames or
 * buffer types here; each file opens with a drawing of its chunk scheme.
 */
package io.sparkcollective.core.algorithm;
