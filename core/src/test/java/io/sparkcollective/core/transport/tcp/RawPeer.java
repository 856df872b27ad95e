package io.sparkcollective.core.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A hand-written peer on a plain socket, for tests that play an attacker or a broken peer against a real
 * endpoint: it writes whatever bytes it is told, and can run the real handshake (knowing the secret) to
 * then send tagged messages of its own making.
 */
final class RawPeer implements AutoCloseable {
  final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private MessageSealer outgoing;
  private MessageSealer incoming;

  RawPeer(InetSocketAddress to) throws IOException {
    socket = new Socket(to.getAddress(), to.getPort());
    socket.setSoTimeout(10_000);
    in = socket.getInputStream();
    out = socket.getOutputStream();
  }

  /** Accepts one connection on {@code server}. */
  RawPeer(Socket accepted) throws IOException {
    socket = accepted;
    socket.setSoTimeout(10_000);
    in = socket.getInputStream();
    out = socket.getOutputStream();
  }

  static byte[] message(byte type, byte[]... parts) {
    ByteBuf b = Unpooled.buffer();
    WireFormat.begin(b, type);
    for (byte[] p : parts) {
      b.writeBytes(p);
    }
    WireFormat.finish(b, 0);
    byte[] bytes = new byte[b.readableBytes()];
    b.readBytes(bytes);
    return bytes;
  }

  static byte[] hello(byte[] nonce, String from, String to) {
    return hello(DataProtection.NONE, nonce, from, to);
  }

  static byte[] hello(DataProtection protection, byte[] nonce, String from, String to) {
    byte[] f = from.getBytes(StandardCharsets.UTF_8);
    byte[] t = to.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(4 + 1 + nonce.length + 4 + f.length + t.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(SecretHandshake.VERSION).put(protection.wireCode()).put(nonce);
    b.putShort((short) f.length).put(f).putShort((short) t.length).put(t);
    return message(WireFormat.HELLO, b.array());
  }

  void write(byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
  }

  /** Opens a message read after the handshake (type byte then body, as {@link #read} returns it) in place. */
  boolean open(byte[] message) {
    ByteBuf b = Unpooled.wrappedBuffer(message);
    b.readByte();
    return io.sparkcollective.core.transport.tcp.link.MessageTags.open(message[0], b, incoming) == null;
  }

  /** Seals a whole message (from its length field) as the next one this peer sends. */
  void seal(ByteBuf msg) {
    io.sparkcollective.core.transport.tcp.link.MessageTags.seal(msg, outgoing);
  }

  /** Writes a whole message (from its length field) with this peer's tag appended, as an authenticated peer. */
  void writeTagged(ByteBuf msg) throws IOException {
    seal(msg);
    byte[] bytes = new byte[msg.readableBytes()];
    msg.readBytes(bytes);
    msg.release();
    write(bytes);
  }

  /** The next whole message: type byte then body; null at end of stream. */
  byte[] read() throws IOException {
    DataInputStream d = new DataInputStream(in);
    byte[] len = new byte[4];
    try {
      d.readFully(len);
    } catch (EOFException e) {
      return null;
    }
    int n = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getInt();
    if (n < 1 || n > (64 << 20) + 4096) {
      throw new IOException("message of " + n + " bytes");
    }
    byte[] m = new byte[n];
    d.readFully(m);
    return m;
  }

  /** Whether the other side closed within {@code ms} (reading and dropping what it still sends). */
  boolean closedWithin(long ms) throws IOException {
    socket.setSoTimeout((int) ms);
    long until = System.nanoTime() + ms * 1_000_000;
    byte[] sink = new byte[4096];
    try {
      while (System.nanoTime() < until) {
        if (in.read(sink) < 0) {
          return true;
        }
      }
      return false;
    } catch (SocketTimeoutException e) {
      return false;
    } catch (IOException e) {
      return true; // reset
    }
  }

  /**
   * Runs the dialling side of the handshake as endpoint {@code from} towards {@code to} with {@code secret};
   * returns the first message after it (ACCEPT's type, or REFUSE's).
   */
  byte handshake(String secret, String from, String to) throws IOException {
    return handshake(secret, from, to, DataProtection.NONE);
  }

  /** As {@link #handshake(String, String, String)}, with {@code protection}. */
  byte handshake(String secret, String from, String to, DataProtection protection) throws IOException {
    SecretHandshake keys = new SecretHandshake(secret);
    byte[] nonce = SecretHandshake.nonce();
    write(hello(protection, nonce, from, to));
    byte[] challenge = read();
    if (challenge == null || challenge[0] != WireFormat.CHALLENGE) {
      return challenge == null ? -1 : challenge[0];
    }
    byte[] serverNonce = java.util.Arrays.copyOfRange(challenge, 5, 5 + SecretHandshake.NONCE_BYTES);
    byte[] t = SecretHandshake.transcript(SecretHandshake.VERSION, protection, nonce, serverNonce, from, to);
    write(message(WireFormat.RESPONSE, keys.clientProof(t)));
    byte[] answer = read();
    outgoing = keys.sealer(t, true, protection);
    incoming = keys.sealer(t, false, protection);
    return answer == null ? -1 : answer[0];
  }

  /**
   * Runs the listening side of the handshake as endpoint {@code self} with {@code secret} (the dialler's HELLO
   * must name it and use {@code protection}); returns the transcript, or throws if the dialler does not finish.
   */
  byte[] listen(String secret, String self, DataProtection protection) throws IOException {
    SecretHandshake keys = new SecretHandshake(secret);
    ByteBuf hello = Unpooled.wrappedBuffer(read());
    if (hello.readByte() != WireFormat.HELLO || hello.readIntLE() != SecretHandshake.VERSION
        || hello.readByte() != protection.wireCode()) {
      throw new IOException("not a HELLO of this version and protection");
    }
    byte[] clientNonce = new byte[SecretHandshake.NONCE_BYTES];
    hello.readBytes(clientNonce);
    String from = hello.readCharSequence(hello.readUnsignedShortLE(), StandardCharsets.UTF_8).toString();
    String to = hello.readCharSequence(hello.readUnsignedShortLE(), StandardCharsets.UTF_8).toString();
    if (!to.equals(self)) {
      throw new IOException("the HELLO was for " + to);
    }
    byte[] serverNonce = SecretHandshake.nonce();
    byte[] t = SecretHandshake.transcript(SecretHandshake.VERSION, protection, clientNonce, serverNonce, from, to);
    ByteBuffer version = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(SecretHandshake.VERSION);
    write(message(WireFormat.CHALLENGE, version.array(), serverNonce, keys.serverProof(t)));
    byte[] response = read();
    if (response == null || response[0] != WireFormat.RESPONSE
        || !SecretHandshake.matches(keys.clientProof(t), java.util.Arrays.copyOfRange(response, 1, response.length))) {
      throw new IOException("the dialler did not prove the secret");
    }
    write(message(WireFormat.ACCEPT));
    outgoing = keys.sealer(t, false, protection);
    incoming = keys.sealer(t, true, protection);
    return t;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
