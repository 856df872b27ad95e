package io.sparkcollective.core.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

/**
 * A self-signed EC key pair in a PKCS12 store, made with the JDK's keytool, serving as key and trust store;
 * its certificate names this machine (localhost, its host name and every IPv4 address of its interfaces),
 * or with {@link #selfSignedFor} only the names given.
 */
public final class TestKeyStores {
  public static final String PASSWORD = "changeit";

  private TestKeyStores() {}

  public static Path selfSigned(Path dir, String name) throws IOException, InterruptedException {
    java.util.List<String> names = new java.util.ArrayList<>(java.util.List.of("dns:localhost", "ip:127.0.0.1"));
    names.add("dns:" + java.net.InetAddress.getLocalHost().getHostName());
    for (java.net.NetworkInterface nic : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
      for (java.net.InetAddress a : java.util.Collections.list(nic.getInetAddresses())) {
        if (a instanceof java.net.Inet4Address && !a.isLoopbackAddress()) {
          names.add("ip:" + a.getHostAddress());
        }
      }
    }
    return selfSignedFor(dir, name, String.join(",", names));
  }

  /** As {@link #selfSigned}, the certificate naming only {@code subjectAltNames} (keytool's form), or none if empty. */
  public static Path selfSignedFor(Path dir, String name, String subjectAltNames) throws IOException,
      InterruptedException {
    Path store = dir.resolve(name + ".p12");
    String keytool = Paths.get(System.getProperty("java.home"), "bin", "keytool").toString();
    java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(keytool, "-genkeypair", "-alias", name,
        "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=" + name, "-validity", "2", "-storetype",
        "PKCS12", "-keystore", store.toString(), "-storepass", PASSWORD, "-keypass", PASSWORD));
    if (!subjectAltNames.isEmpty()) {
      cmd.add("-ext");
      cmd.add("SAN=" + subjectAltNames);
    }
    Process p = new ProcessBuilder(cmd).inheritIO().start();
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("keytool failed to make " + store);
    }
    return store;
  }
}
