/**
 * The Spark integration: the {@code SparkPlugin} whose executor side runs one endpoint per executor JVM,
 * forms a group per barrier stage through the driver plugin, and hands tasks their communicator. Spark
 * appears only in this module; the engine is {@code io.sparkcollective.core}.
 */
package io.sparkcollective.spark;
