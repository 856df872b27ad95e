package io.sparkcollective.core.launch;

import io.sparkcollective.core.api.CollectiveUsageException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A static group description: rank r's endpoint is entry r. Parsed from {@code host:port,host:port,...}
 * or from a file with one {@code host:port} per line ({@code #} comments and blank lines ignored).
 */
public final class PeerList {
  private PeerList() {}

  public static List<InetSocketAddress> parse(String commaSeparated) {
    List<InetSocketAddress> peers = new ArrayList<>();
    for (String entry : commaSeparated.split(",")) {
      if (!entry.isBlank()) {
        peers.add(parseEntry(entry.trim(), "peer list entry " + peers.size()));
      }
    }
    if (peers.isEmpty()) {
      throw new CollectiveUsageException("peer list '" + commaSeparated + "' names no endpoint");
    }
    return Collections.unmodifiableList(peers);
  }

  public static List<InetSocketAddress> read(Path file) throws IOException {
    List<InetSocketAddress> peers = new ArrayList<>();
    int line = 0;
    for (String raw : Files.readAllLines(file)) {
      line++;
      String s = raw.replaceAll("#.*", "").trim();
      if (!s.isEmpty()) {
        peers.add(parseEntry(s, file + " line " + line));
      }
    }
    if (peers.isEmpty()) {
      throw new CollectiveUsageException(file + " names no endpoint");
    }
    return Collections.unmodifiableList(peers);
  }

  /** The list as {@link #parse} reads it. */
  public static String format(List<InetSocketAddress> peers) {
    StringBuilder sb = new StringBuilder();
    for (InetSocketAddress a : peers) {
      if (sb.length() > 0) {
        sb.append(',');
      }
      sb.append(a.getHostString()).append(':').append(a.getPort());
    }
    return sb.toString();
  }

  private static InetSocketAddress parseEntry(String s, String where) {
    int colon = s.lastIndexOf(':');
    if (colon <= 0 || colon == s.length() - 1) {
      throw new CollectiveUsageException(where + ": '" + s + "' is not host:port");
    }
    try {
      int port = Integer.parseInt(s.substring(colon + 1));
      if (port <= 0 || port > 65535) {
        throw new NumberFormatException();
      }
      return InetSocketAddress.createUnresolved(s.substring(0, colon), port);
    } catch (NumberFormatException e) {
      throw new CollectiveUsageException(where + ": '" + s + "' has no valid port");
    }
  }
}
