package io.sparkcollective.core.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Keeps the layers drawn in README's Architecture section: algorithms see only links; data flows downward
 * only; core knows nothing of Spark; inside the TCP transport, each concern depends only on the ones below it
 * and Netty's channels stay in the pipeline package.
 */
@Timeout(60)
class LayeringTest {
  private static JavaClasses classes;

  @BeforeAll
  static void load() {
    classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages("io.sparkcollective.core");
  }

  @Test
  void algorithmsShouldNeverSeeSocketsNettyTransportsOrTheEngine() {
    noClasses().that().resideInAPackage("..core.algorithm..")
        .should().dependOnClassesThat().resideInAnyPackage(
            "io.netty..", "java.net..", "java.nio..", "..core.transport..", "..core.engine..", "..core.kernel..")
        .check(classes);
  }

  @Test
  void kernelsShouldNotDependOnTransportsAlgorithmsOrTheEngine() {
    noClasses().that().resideInAPackage("..core.kernel..")
        .should().dependOnClassesThat().resideInAnyPackage(
            "..core.transport..", "..core.algorithm..", "..core.engine..", "io.netty..")
        .check(classes);
  }

  @Test
  void transportsShouldNotKnowAlgorithmsOrTheEngine() {
    noClasses().that().resideInAPackage("..core.transport..")
        .should().dependOnClassesThat().resideInAnyPackage("..core.algorithm..", "..core.engine..")
        .check(classes);
  }

  @Test
  void theApiShouldDependOnNothingElseOfTheLibrary() {
    noClasses().that().resideInAPackage("..core.api..")
        .should().dependOnClassesThat().resideInAnyPackage(
            "..core.algorithm..", "..core.engine..", "..core.transport..", "..core.kernel..", "..core.config..")
        .check(classes);
  }

  @Test
  void theSimulatorShouldRunAlgorithmsWithoutAnyTransportOrThread() {
    noClasses().that().resideInAPackage("..core.simulation..")
        .should().dependOnClassesThat().resideInAnyPackage(
            "..core.transport..", "..core.engine..", "io.netty..", "java.net..", "java.nio.channels..",
            "java.util.concurrent..")
        .check(classes);
  }

  private static final String TCP = "..core.transport.tcp";

  @Test
  void theWireProtocolShouldKnowNoConnectionThreadOrGroup() {
    noClasses().that().resideInAPackage(TCP + ".protocol..")
        .should().dependOnClassesThat().resideInAnyPackage(TCP, TCP + ".link..", TCP + ".pipeline..",
            TCP + ".direct..", TCP + ".shm..", "io.netty.channel..", "java.nio.channels..")
        .check(classes);
  }

  @Test
  void theLinkSeamShouldDependOnlyOnTheProtocol() {
    noClasses().that().resideInAPackage(TCP + ".link..")
        .should().dependOnClassesThat().resideInAnyPackage(TCP, TCP + ".pipeline..", TCP + ".direct..",
            TCP + ".shm..", "io.netty.channel..")
        .check(classes);
  }

  @Test
  void sharedMemoryRingsShouldKnowNoSocketOrProtocol() {
    noClasses().that().resideInAPackage(TCP + ".shm..")
        .should().dependOnClassesThat().resideInAnyPackage(TCP, TCP + ".link..", TCP + ".pipeline..",
            TCP + ".direct..", TCP + ".protocol..", "io.netty..", "java.net..")
        .check(classes);
  }

  @Test
  void theTwoIoEnginesShouldNotKnowEachOtherNorTheEndpoint() {
    noClasses().that().resideInAPackage(TCP + ".pipeline..")
        .should().dependOnClassesThat().resideInAnyPackage(TCP, TCP + ".direct..", TCP + ".shm..")
        .check(classes);
    noClasses().that().resideInAPackage(TCP + ".direct..")
        .should().dependOnClassesThat().resideInAnyPackage(TCP, TCP + ".pipeline..", "io.netty.channel..")
        .check(classes);
  }

  @Test
  void nettyChannelsShouldStayInThePipelinePackage() {
    noClasses().that().resideOutsideOfPackage(TCP + ".pipeline..")
        .should().dependOnClassesThat().resideInAnyPackage("io.netty.channel..", "io.netty.bootstrap..",
            "io.netty.handler..")
        .check(classes);
  }

  @Test
  void coreShouldNotDependOnSpark() {
    noClasses().should().dependOnClassesThat().resideInAnyPackage("org.apache.spark..", "scala..")
        .check(classes);
  }
}
