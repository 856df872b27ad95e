/** The injected monotonic clock used for deadlines. */
package io.sparkcollective.core.time;
