package io.sparkcollective.core.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkcollective.core.api.CollectiveUsageException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class PeerListTest {

  @Test
  void shouldReadRanksInOrderFromArgumentsAndFiles(@TempDir Path dir) throws Exception {
    List<InetSocketAddress> a = PeerList.parse("10.0.0.1:7077, host-b:7078,[::1]:7079");
    assertEquals(3, a.size());
    assertEquals("host-b", a.get(1).getHostString());
    assertEquals(7079, a.get(2).getPort());
    assertEquals(a, PeerList.parse(PeerList.format(a)));
    Path file = dir.resolve("peers.txt");
    Files.writeString(file, "# rank 0\n10.0.0.1:7077\n\nhost-b:7078  # rank 1\n");
    List<InetSocketAddress> f = PeerList.read(file);
    assertEquals(List.of("10.0.0.1:7077", "host-b:7078"), List.of(PeerList.format(f.subList(0, 1)),
        PeerList.format(f.subList(1, 2))));
  }

  @Test
  void shouldNameTheBadEntry(@TempDir Path dir) throws Exception {
    CollectiveUsageException e = assertThrows(CollectiveUsageException.class, () -> PeerList.parse("a:1,b"));
    assertTrue(e.getMessage().contains("entry 1") && e.getMessage().contains("'b'"), e.getMessage());
    Path file = dir.resolve("peers.txt");
    Files.writeString(file, "a:1\nb:99999\n");
    e = assertThrows(CollectiveUsageException.class, () -> PeerList.read(file));
    assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    assertThrows(CollectiveUsageException.class, () -> PeerList.parse(" , "));
  }
}
