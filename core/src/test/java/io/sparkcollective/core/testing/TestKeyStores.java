package io.sparkcollective.core.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

/** A self-signed EC key pair in a PKCS12 store, made with the JDK's keytool, serving as key and trust store. */
public final class TestKeyStores {
  public static final String PASSWORD = "changeit";

  private TestKeyStores() {}

  public static Path selfSigned(Path dir, String name) throws IOException, InterruptedException {
    Path store = dir.resolve(name + ".p12");
    String keytool = Paths.get(System.getProperty("java.home"), "bin", "keytool").toString();
    Process p = new ProcessBuilder(keytool, "-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname",
        "secp256r1", "-dname", "CN=" + name, "-validity", "2", "-storetype", "PKCS12", "-keystore",
        store.toString(), "-storepass", PASSWORD, "-keypass", PASSWORD).inheritIO().start();
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("keytool failed to make " + store);
    }
    return store;
  }
}
