/**
 * What users call: {@link io.sparkcollective.core.api.Communicator} (start here), the buffers it works on
 * ({@link io.sparkcollective.core.api.DataBuffer}, {@link io.sparkcollective.core.api.DType}), reductions,
 * per-call options and the exception hierarchy rooted at
 * {@link io.sparkcollective.core.api.CollectiveException}. Depends on nothing else of the library.
 */
package io.sparkcollective.core.api;
