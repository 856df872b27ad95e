/** Every setting of the engine with its default: {@link io.sparkcollective.core.config.CollectiveConfig}. */
package io.sparkcollective.core.config;
