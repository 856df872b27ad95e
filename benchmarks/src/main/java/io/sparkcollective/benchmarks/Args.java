package io.sparkcollective.benchmarks;

import java.util.HashMap;
import java.util.Map;

/** {@code --key value} command-line options with defaults. */
final class Args {
  private final Map<String, String> values = new HashMap<>();

  Args(String[] args) {
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --key value pairs, got '" + args[i] + "'");
      }
      String key = args[i].substring(2);
      if (values.put(key, args[++i]) != null) {
        throw new IllegalArgumentException("--" + key + " given twice (one --" + key
            + " takes every value it needs, e.g. --conf a=1,b=2)");
      }
    }
  }

  String get(String key, String def) {
    return values.getOrDefault(key, def);
  }

  String require(String key) {
    String v = values.get(key);
    if (v == null) {
      throw new IllegalArgumentException("missing --" + key);
    }
    return v;
  }

  int getInt(String key, int def) {
    return Integer.parseInt(get(key, String.valueOf(def)));
  }

  double getDouble(String key, double def) {
    return Double.parseDouble(get(key, String.valueOf(def)));
  }

  long[] getLongs(String key, long[] def) {
    String v = values.get(key);
    if (v == null) {
      return def;
    }
    String[] parts = v.split(",");
    long[] out = new long[parts.length];
    for (int i = 0; i < parts.length; i++) {
      out[i] = Long.parseLong(parts[i].trim());
    }
    return out;
  }
}
