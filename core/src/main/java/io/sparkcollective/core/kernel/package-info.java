/**
 * The element-wise work: {@link io.sparkcollective.core.kernel.Kernels} (vectorisable reduction loops),
 * {@link io.sparkcollective.core.kernel.HalfFloats} (F16/BF16 conversions),
 * {@link io.sparkcollective.core.kernel.Elements} (moves segments between user memory and
 * {@link io.sparkcollective.core.kernel.WireBuffer}s) and per-operation
 * {@link io.sparkcollective.core.kernel.Scratch}.
 */
package io.sparkcollective.core.kernel;
