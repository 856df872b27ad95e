package io.sparkcollective.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The plugin jar's version (the build's), which a Python package must match. */
final class PluginVersion {
  static final String VERSION = read();

  private PluginVersion() {}

  private static String read() {
    try (InputStream in = PluginVersion.class.getResourceAsStream("plugin.properties")) {
      if (in == null) {
        throw new IllegalStateException("plugin.properties is missing from the plugin jar");
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
