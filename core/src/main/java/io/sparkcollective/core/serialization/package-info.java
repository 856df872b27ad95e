/** Object serialisation for the object collectives (Kryo by default). */
package io.sparkcollective.core.serialization;
