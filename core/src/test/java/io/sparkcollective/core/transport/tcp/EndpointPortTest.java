package io.sparkcollective.core.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.config.CollectiveConfig;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The endpoint takes the first free port of the configured range on the configured address. */
@Timeout(60)
class EndpointPortTest {

  @Test
  void shouldSkipBusyPortsOfTheRangeAndNameTheSettingWhenAllAreBusy() throws Exception {
    try (ServerSocket busy = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      int p = busy.getLocalPort();
      CollectiveConfig range = CollectiveConfig.from(Map.of(CollectiveConfig.PORT, p + "-" + (p + 20),
          CollectiveConfig.BIND_ADDRESS, "127.0.0.1"));
      try (TcpEndpoint e = TcpEndpoint.start("ignored-host", "s", range)) {
        assertTrue(e.address().getPort() > p && e.address().getPort() <= p + 20, e.addressKey());
        assertEquals("127.0.0.1", e.address().getHostString());
      }
      CollectiveConfig only = CollectiveConfig.from(Map.of(CollectiveConfig.PORT, String.valueOf(p)));
      CollectiveUsageException ex = assertThrows(CollectiveUsageException.class,
          () -> TcpEndpoint.start("127.0.0.1", "s", only));
      assertTrue(ex.getMessage().contains("spark.collective.port=" + p), ex.getMessage());
    }
  }

  @Test
  void shouldListenOnTheAddressOfTheConfiguredInterfaceAndNameAMissingOne() throws Exception {
    String lo = java.net.NetworkInterface.networkInterfaces().filter(n -> {
      try {
        return n.isLoopback() && n.isUp();
      } catch (java.net.SocketException e) {
        return false;
      }
    }).map(java.net.NetworkInterface::getName).findFirst().orElseThrow();
    CollectiveConfig viaInterface = CollectiveConfig.from(Map.of(CollectiveConfig.BIND_INTERFACE, lo));
    try (TcpEndpoint e = TcpEndpoint.start("ignored-host", "s", viaInterface)) {
      assertEquals("127.0.0.1", e.address().getHostString());
    }
    CollectiveConfig missing = CollectiveConfig.from(Map.of(CollectiveConfig.BIND_INTERFACE, "no-such-nic0"));
    CollectiveUsageException ex = assertThrows(CollectiveUsageException.class,
        () -> TcpEndpoint.start("127.0.0.1", "s", missing));
    assertTrue(ex.getMessage().contains("spark.collective.bindInterface=no-such-nic0: no such network interface"),
        ex.getMessage());
    assertTrue(ex.getMessage().contains(lo), "lists the interfaces there are: " + ex.getMessage());
    CollectiveUsageException both = assertThrows(CollectiveUsageException.class, () -> CollectiveConfig.from(
        Map.of(CollectiveConfig.BIND_INTERFACE, lo, CollectiveConfig.BIND_ADDRESS, "127.0.0.1")));
    assertTrue(both.getMessage().contains("not both"), both.getMessage());
  }
}
