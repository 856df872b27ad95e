/**
 * Puts the layers together: {@link io.sparkcollective.core.engine.EngineCommunicator} implements the API
 * over a transport, running algorithms through an operation context that stamps and checks every frame;
 * {@link io.sparkcollective.core.engine.LocalGroup} builds an in-JVM group.
 */
package io.sparkcollective.core.engine;
