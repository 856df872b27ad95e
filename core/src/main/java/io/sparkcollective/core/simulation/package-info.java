/**
 * The library's real algorithms on a simulated network in virtual time: {@link
 * io.sparkcollective.core.simulation.NetworkModel} says what links, hosts and CPUs cost, {@link
 * io.sparkcollective.core.simulation.RankSchedule} records what an algorithm does on each rank (it implements
 * {@link io.sparkcollective.core.algorithm.Links}, so the algorithm code runs unchanged), and {@link
 * io.sparkcollective.core.simulation.NetworkSimulator} replays every rank's schedule as a discrete-event
 * simulation, optionally moving and reducing real values. Nothing here touches a socket or a thread.
 */
package io.sparkcollective.core.simulation;
