package io.sparkcollective.core.transport.tcp;

import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.config.CollectiveConfig;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Collections;

/** Which address an endpoint listens on: the {@code bindInterface} and {@code bindAddress} settings. */
final class BindAddresses {
  private BindAddresses() {}

  /** The host to listen on: the interface's address, else the bind address, else {@code defaultHost}. */
  static String host(CollectiveConfig config, String defaultHost) {
    return !config.bindInterface().isEmpty() ? interfaceAddress(config.bindInterface())
        : config.bindAddress().isEmpty() ? defaultHost : config.bindAddress();
  }

  /**
   * The address of network interface {@code name} (IPv4 preferred, then any non-link-local one).
   *
   * @throws CollectiveUsageException naming the setting and the interfaces there are, if it has none
   */
  static String interfaceAddress(String name) {
    String key = CollectiveConfig.SPARK_PREFIX + CollectiveConfig.BIND_INTERFACE;
    try {
      NetworkInterface nic = NetworkInterface.getByName(name);
      if (nic != null && nic.isUp()) {
        String fallback = null;
        for (InetAddress a : Collections.list(nic.getInetAddresses())) {
          if (a instanceof Inet4Address) {
            return a.getHostAddress();
          }
          if (fallback == null && !a.isLinkLocalAddress()) {
            fallback = a.getHostAddress();
          }
        }
        if (fallback != null) {
          return fallback;
        }
      }
      StringBuilder known = new StringBuilder();
      for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        if (n.isUp()) {
          known.append(known.length() == 0 ? "" : ", ").append(n.getName());
        }
      }
      throw new CollectiveUsageException(key + "=" + name + ": " + (nic == null ? "no such network interface"
          : nic.isUp() ? "the interface has no usable address" : "the interface is down") + " on this host "
          + "(interfaces up: " + known + ")");
    } catch (SocketException e) {
      throw new CollectiveUsageException(key + "=" + name + ": cannot list the network interfaces: " + e);
    }
  }
}
