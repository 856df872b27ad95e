/** In-JVM transport: ranks are threads, a send hands the frame to the receiver's inbox. */
package io.sparkcollective.core.transport.local;
