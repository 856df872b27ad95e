package io.sparkcollective.core.transport.tcp.pipeline;

import io.sparkcollective.core.transport.Frame;
import io.sparkcollective.core.transport.FramePool;
import io.sparkcollective.core.transport.tcp.link.Inbound;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.LinkListener;
import io.sparkcollective.core.transport.tcp.link.Receiver;
import io.sparkcollective.core.transport.tcp.protocol.DataHeader;
import java.util.ArrayList;
import java.util.List;

/**
 * The groups' side of a pipeline under test: takes every DATA payload into a frame of a real pool (which it
 * releases once complete, so a frame the pipeline loses shows as outstanding) and writes down every message
 * and every link that opened or closed, as text.
 */
final class RecordingInbound implements Inbound, LinkListener {
  final FramePool pool;
  final List<String> events = new ArrayList<>();
  final List<String> lost = new ArrayList<>();
  final List<Link> opened = new ArrayList<>();

  RecordingInbound(int maxFrameBytes) {
    this.pool = new FramePool(maxFrameBytes, DataHeader.BYTES, 16);
  }

  @Override
  public Receiver receiver(String remoteKey, long group, int dest) {
    return new Receiver() {
      @Override
      public Frame accept(String from, DataHeader h, int payloadBytes, boolean lent) {
        if (payloadBytes > pool.maxCapacity()) {
          return null;
        }
        Frame f = pool.acquire(lent ? 0 : payloadBytes);
        h.copyTo(f);
        return f;
      }

      @Override
      public void complete(Frame f, int payloadBytes, int flags, int crc, long receiveNanos) {
        events.add("DATA " + Long.toHexString(group) + " " + f.source() + "->" + dest + " seq " + f.seq() + " "
            + payloadBytes + " bytes, first " + (payloadBytes > 0 ? f.payload().view(payloadBytes).get(0) : -1));
        pool.release(f);
      }
    };
  }

  @Override
  public void onJoin(String remoteKey, long group, int source, int dest, int size) {
    events.add("JOIN " + Long.toHexString(group) + " " + source + "->" + dest + " size " + size);
  }

  @Override
  public void onJoinRefused(String remoteKey, long group, int source, int dest, String reason) {
    events.add("REFUSE_JOIN " + Long.toHexString(group) + " " + source + "->" + dest + ": " + reason);
  }

  @Override
  public void onAbort(String remoteKey, long group, int source, int dest, int origin, String reason) {
    events.add("ABORT " + Long.toHexString(group) + " " + source + "->" + dest + " origin " + origin + ": " + reason);
  }

  @Override
  public void onLeave(String remoteKey, long group, int source, int dest, int copies) {
    events.add("LEAVE " + Long.toHexString(group) + " " + source + "->" + dest + (copies == 1 ? "" : " x" + copies));
  }

  @Override
  public void opened(Link link, String remoteKey) {
    opened.add(link);
  }

  @Override
  public void lost(String remoteKey, Link link, boolean outbound, String why) {
    lost.add(why);
  }
}
