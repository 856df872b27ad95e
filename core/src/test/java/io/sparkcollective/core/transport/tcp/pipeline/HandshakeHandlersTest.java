package io.sparkcollective.core.transport.tcp.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.concurrent.Promise;
import io.sparkcollective.core.api.CollectiveAuthenticationException;
import io.sparkcollective.core.auth.DataProtection;
import io.sparkcollective.core.auth.MessageSealer;
import io.sparkcollective.core.auth.SecretHandshake;
import io.sparkcollective.core.config.CollectiveConfig;
import io.sparkcollective.core.config.Tuning;
import io.sparkcollective.core.transport.tcp.link.Link;
import io.sparkcollective.core.transport.tcp.link.MessageTags;
import io.sparkcollective.core.transport.tcp.protocol.ControlMessages;
import io.sparkcollective.core.transport.tcp.protocol.WireFormat;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Each state of both sides of the handshake and of the frame decoder, one message at a time through an
 * {@link EmbeddedChannel}: what each side sends back, when it closes, what it hands on. The other side is
 * played by the test with {@link SecretHandshake}'s own MAC functions.
 */
@Timeout(60)
class HandshakeHandlersTest {
  private static final String SECRET = "handshake-test-secret";
  private static final SecretHandshake KEYS = new SecretHandshake(SECRET);
  private NettyPipelines pipelines;
  private RecordingInbound groups;
  private PipelineContext context;

  @BeforeEach
  void setUp() {
    CollectiveConfig config = CollectiveConfig.from(Map.of(CollectiveConfig.PROGRESS, "eventLoop"));
    pipelines = new NettyPipelines(config, false);
    groups = new RecordingInbound(config.segmentBytes());
    context = new PipelineContext(config, KEYS, () -> "127.0.0.1:7000", groups, groups, null);
  }

  @AfterEach
  void tearDown() {
    pipelines.shutdown();
  }

  private static ByteBuf message(byte type, byte[]... parts) {
    ByteBuf out = Unpooled.buffer();
    WireFormat.begin(out, type);
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    WireFormat.finish(out, 0);
    return out;
  }

  private static byte[] version(int v) {
    return new byte[] {(byte) v, (byte) (v >> 8), (byte) (v >> 16), (byte) (v >> 24)};
  }

  private static byte[] transcript(byte[] clientNonce, byte[] serverNonce, String from, String to) {
    return SecretHandshake.transcript(SecretHandshake.VERSION, DataProtection.NONE, clientNonce, serverNonce, from, to);
  }

  private static final String SELF = "127.0.0.1:7000";
  private static final String PEER = "127.0.0.1:7001";

  private static byte[] name(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[2 + b.length];
    out[0] = (byte) b.length;
    out[1] = (byte) (b.length >> 8);
    System.arraycopy(b, 0, out, 2, b.length);
    return out;
  }

  private static ByteBuf hello(int v, byte[] nonce, String from, String to) {
    return message(WireFormat.HELLO, version(v), new byte[] {DataProtection.NONE.wireCode()}, nonce, name(from),
        name(to));
  }

  private static ByteBuf hello(byte[] nonce) {
    return hello(SecretHandshake.VERSION, nonce, PEER, SELF);
  }

  /** The next message the channel wrote, its length field checked and skipped (type byte next), or null. */
  private static ByteBuf sent(EmbeddedChannel ch) {
    ByteBuf m = ch.readOutbound();
    if (m != null) {
      assertEquals(m.readableBytes() - WireFormat.LENGTH_FIELD_BYTES, m.readIntLE(), "length field");
    }
    return m;
  }

  private static byte[] bytes(ByteBuf in, int n) {
    byte[] b = new byte[n];
    in.readBytes(b);
    return b;
  }

  private static String text(ByteBuf in) {
    return in.toString(StandardCharsets.UTF_8);
  }

  private EmbeddedChannel server() {
    return new EmbeddedChannel(NettyPipelines.frameDecoder(), new HandshakeHandlers.Server(context));
  }

  // ---------------------------------------------------------------------------------------- listening side

  @Test
  void serverShouldChallengeAHelloAndAcceptTheRightResponse() {
    EmbeddedChannel ch = server();
    byte[] clientNonce = SecretHandshake.nonce();
    ch.writeInbound(hello(clientNonce));
    ByteBuf challenge = sent(ch);
    assertEquals(WireFormat.CHALLENGE, challenge.readByte());
    assertEquals(SecretHandshake.VERSION, challenge.readIntLE());
    byte[] serverNonce = bytes(challenge, SecretHandshake.NONCE_BYTES);
    byte[] t = transcript(clientNonce, serverNonce, PEER, SELF);
    assertArrayEquals(KEYS.serverProof(t), bytes(challenge, SecretHandshake.MAC_BYTES),
        "the server proves it knows the secret, over both nonces and both names");
    assertFalse(challenge.isReadable());
    challenge.release();
    assertTrue(groups.opened.isEmpty(), "no link before the response");

    ch.writeInbound(message(WireFormat.RESPONSE, KEYS.clientProof(t)));
    ByteBuf accept = sent(ch);
    assertEquals(WireFormat.ACCEPT, accept.readByte());
    accept.release();
    assertNotNull(ch.pipeline().get(MessageHandler.class), "messages are read from now on");
    assertNull(ch.pipeline().get(HandshakeHandlers.Server.class));
    assertEquals(1, groups.opened.size());
    assertTrue(ch.isActive());

    MessageSealer dialler = KEYS.sealer(t, true, DataProtection.NONE);
    ByteBuf join = ControlMessages.join(ch.alloc(), 0xABCL, 1, 0, 2);
    MessageTags.seal(join, dialler);
    ch.writeInbound(join);
    assertEquals("[JOIN abc 1->0 size 2]", groups.events.toString(), "what follows ACCEPT reaches the groups");
    ch.writeInbound(ControlMessages.join(ch.alloc(), 0xABCL, 1, 0, 2));
    assertEquals(1, groups.events.size(), "a message without its tag does not");
    assertFalse(ch.isActive(), "and ends the connection");
    ch.finishAndReleaseAll();
  }

  private void assertRefused(EmbeddedChannel ch, String reasonPart) {
    ByteBuf refuse = sent(ch);
    assertNotNull(refuse, "a refusal was sent");
    assertEquals(WireFormat.REFUSE, refuse.readByte());
    String reason = text(refuse);
    refuse.release();
    assertTrue(reason.contains(reasonPart), reason);
    ch.runPendingTasks();
    assertFalse(ch.isActive(), "closed after refusing");
    assertTrue(groups.opened.isEmpty());
    assertEquals(1, context.refusals.get());
    ch.finishAndReleaseAll();
  }

  @Test
  void serverShouldRefuseAWrongResponseAndClose() {
    EmbeddedChannel ch = server();
    ch.writeInbound(hello(SecretHandshake.nonce()));
    sent(ch).release();
    ch.writeInbound(message(WireFormat.RESPONSE, new byte[SecretHandshake.MAC_BYTES]));
    assertRefused(ch, "wrong shared secret");
  }

  @Test
  void serverShouldRefuseAnotherProtocolVersionNamingBoth() {
    EmbeddedChannel ch = server();
    ch.writeInbound(hello(SecretHandshake.VERSION + 1, SecretHandshake.nonce(), PEER, SELF));
    assertRefused(ch, "protocol version " + (SecretHandshake.VERSION + 1) + " is not supported; this endpoint "
        + "speaks version " + SecretHandshake.VERSION);
  }

  @Test
  void serverShouldRefuseAResponseBeforeAnyHello() {
    EmbeddedChannel ch = server();
    ch.writeInbound(message(WireFormat.RESPONSE, new byte[SecretHandshake.MAC_BYTES]));
    assertRefused(ch, "unexpected message type " + WireFormat.RESPONSE);
  }

  @Test
  void serverShouldRefuseASecondHello() {
    EmbeddedChannel ch = server();
    ch.writeInbound(hello(SecretHandshake.nonce()));
    sent(ch).release();
    ch.writeInbound(hello(SecretHandshake.nonce()));
    assertRefused(ch, "unexpected message type " + WireFormat.HELLO);
  }

  @Test
  void serverShouldRefuseAHelloMeantForAnotherEndpoint() {
    EmbeddedChannel ch = server();
    ch.writeInbound(hello(SecretHandshake.VERSION, SecretHandshake.nonce(), PEER, "127.0.0.1:7999"));
    assertRefused(ch, "it dialled 127.0.0.1:7999, but this endpoint is " + SELF);
  }

  @Test
  void serverShouldRefuseANameWithControlCharactersWithoutEchoingIt() {
    EmbeddedChannel ch = server();
    ch.writeInbound(hello(SecretHandshake.VERSION, SecretHandshake.nonce(), "x:1\n2026 forged log line", SELF));
    assertRefused(ch, "malformed hello");
  }

  @Test
  void serverShouldRefuseAHelloLongerThanAHandshakeNeedsBeforeBufferingIt() {
    EmbeddedChannel ch = new EmbeddedChannel(NettyPipelines.frameDecoder(Tuning.HANDSHAKE_MAX_BYTES),
        new HandshakeHandlers.Server(context));
    ByteBuf big = Unpooled.buffer().writeIntLE(64 << 20).writeByte(WireFormat.HELLO).writeZero(2048);
    ch.writeInbound(big);
    ch.runPendingTasks();
    assertFalse(ch.isActive(), "closed on the length field, not after 64 MiB");
    assertEquals(1, context.refusals.get());
    ch.finishAndReleaseAll();
  }

  @Test
  void serverShouldRefuseGroupTrafficBeforeTheHandshake() {
    EmbeddedChannel ch = server();
    ch.writeInbound(ControlMessages.join(ch.alloc(), 0xABCL, 1, 0, 2));
    assertRefused(ch, "unexpected message type " + WireFormat.JOIN);
    assertTrue(groups.events.isEmpty(), "nothing reached the groups");
  }

  // ---------------------------------------------------------------------------------------- dialling side

  private EmbeddedChannel client(Promise<Link>[] done) {
    EmbeddedChannel ch = new EmbeddedChannel();
    @SuppressWarnings("unchecked")
    Promise<Link> p = (Promise<Link>) (Promise<?>) ch.eventLoop().newPromise();
    done[0] = p;
    ch.pipeline().addLast(NettyPipelines.frameDecoder(), new HandshakeHandlers.Client(context, PEER, p));
    ch.pipeline().fireChannelActive();
    return ch;
  }

  /** The HELLO a client sent on becoming active; returns its nonce. */
  private static byte[] helloOf(EmbeddedChannel ch) {
    ByteBuf hello = sent(ch);
    assertEquals(WireFormat.HELLO, hello.readByte());
    assertEquals(SecretHandshake.VERSION, hello.readIntLE());
    assertEquals(DataProtection.NONE.wireCode(), hello.readByte(), "the client names its data protection");
    byte[] nonce = bytes(hello, SecretHandshake.NONCE_BYTES);
    assertEquals(SELF.length(), hello.readUnsignedShortLE());
    assertEquals(SELF, hello.readCharSequence(SELF.length(), StandardCharsets.UTF_8).toString(),
        "the client names the endpoint it is");
    assertEquals(PEER.length(), hello.readUnsignedShortLE());
    assertEquals(PEER, text(hello), "and the one it means to reach");
    hello.release();
    return nonce;
  }

  @Test
  void clientShouldAnswerAGenuineChallengeAndHandOverTheLinkOnAccept() {
    @SuppressWarnings("unchecked")
    Promise<Link>[] done = new Promise[1];
    EmbeddedChannel ch = client(done);
    byte[] clientNonce = helloOf(ch);
    byte[] serverNonce = SecretHandshake.nonce();
    byte[] t = transcript(clientNonce, serverNonce, SELF, PEER);
    ch.writeInbound(message(WireFormat.CHALLENGE, version(SecretHandshake.VERSION), serverNonce,
        KEYS.serverProof(t)));
    ByteBuf response = sent(ch);
    assertEquals(WireFormat.RESPONSE, response.readByte());
    assertArrayEquals(KEYS.clientProof(t), bytes(response, SecretHandshake.MAC_BYTES));
    response.release();
    assertFalse(done[0].isDone(), "not connected before ACCEPT");

    ch.writeInbound(message(WireFormat.ACCEPT));
    assertTrue(done[0].isSuccess());
    assertNotNull(ch.pipeline().get(MessageHandler.class));
    assertEquals(1, groups.opened.size());
    ch.finishAndReleaseAll();
  }

  @Test
  void clientShouldCloseOnAChallengeFromAnEndpointWithoutTheSecret() {
    @SuppressWarnings("unchecked")
    Promise<Link>[] done = new Promise[1];
    EmbeddedChannel ch = client(done);
    byte[] clientNonce = helloOf(ch);
    byte[] serverNonce = SecretHandshake.nonce();
    ch.writeInbound(message(WireFormat.CHALLENGE, version(SecretHandshake.VERSION), serverNonce,
        new SecretHandshake("another secret").serverProof(
            transcript(clientNonce, serverNonce, SELF, PEER))));
    assertNull(sent(ch), "no response to an impostor");
    assertFalse(ch.isActive());
    CollectiveAuthenticationException e = assertInstanceOf(CollectiveAuthenticationException.class,
        done[0].cause());
    assertTrue(e.getMessage().contains("127.0.0.1:7001 failed authentication"), e.getMessage());
    ch.finishAndReleaseAll();
  }

  @Test
  void clientShouldReportARefusalWithItsReason() {
    @SuppressWarnings("unchecked")
    Promise<Link>[] done = new Promise[1];
    EmbeddedChannel ch = client(done);
    helloOf(ch);
    ch.writeInbound(message(WireFormat.REFUSE, "protocol version 1 is not supported".getBytes(StandardCharsets.UTF_8)));
    assertFalse(ch.isActive());
    assertTrue(done[0].cause().getMessage().contains("refused the connection: protocol version 1 is not supported"),
        done[0].cause().getMessage());
    ch.finishAndReleaseAll();
  }

  @Test
  void clientShouldEscapeARefusalReasonBeforeItReachesALogOrAnError() {
    @SuppressWarnings("unchecked")
    Promise<Link>[] done = new Promise[1];
    EmbeddedChannel ch = client(done);
    helloOf(ch);
    ch.writeInbound(message(WireFormat.REFUSE, "no\n2026-12-01 ERROR forged line".getBytes(StandardCharsets.UTF_8)));
    String why = done[0].cause().getMessage();
    assertFalse(why.contains("\n"), why);
    assertTrue(why.contains("no\\u000a2026-12-01 ERROR forged line"), why);
    ch.finishAndReleaseAll();
  }

  @Test
  void clientShouldRefuseAnAcceptThatNoChallengeCameBefore() {
    @SuppressWarnings("unchecked")
    Promise<Link>[] done = new Promise[1];
    EmbeddedChannel ch = client(done);
    helloOf(ch);
    ch.writeInbound(message(WireFormat.ACCEPT));
    assertFalse(ch.isActive(), "a listener that never proved the secret gets nothing");
    assertNull(sent(ch));
    assertInstanceOf(CollectiveAuthenticationException.class, done[0].cause());
    assertTrue(groups.opened.isEmpty());
    ch.finishAndReleaseAll();
  }

  @Test
  void clientShouldCloseOnGroupTrafficDuringTheHandshake() {
    @SuppressWarnings("unchecked")
    Promise<Link>[] done = new Promise[1];
    EmbeddedChannel ch = client(done);
    helloOf(ch);
    ch.writeInbound(ControlMessages.join(ch.alloc(), 0xABCL, 1, 0, 2));
    assertFalse(ch.isActive());
    String why = done[0].cause().getMessage();
    assertTrue(why.contains("sent message type " + WireFormat.JOIN), why);
    assertTrue(groups.events.isEmpty());
    ch.finishAndReleaseAll();
  }

  // ------------------------------------------------------------------------------------------- decoder

  @Test
  void decoderShouldReassembleAMessageSplitAcrossReadsAndStripItsLength() {
    EmbeddedChannel ch = new EmbeddedChannel(NettyPipelines.frameDecoder());
    ByteBuf whole = ControlMessages.leave(ch.alloc(), 0x1234L, 3, 1, 1);
    int n = whole.readableBytes();
    ch.writeInbound(whole.retainedSlice(0, 3));
    assertNull(ch.readInbound(), "not before its length field is complete");
    ch.writeInbound(whole.retainedSlice(3, 5));
    assertNull(ch.readInbound(), "not before its body is complete");
    ch.writeInbound(whole.retainedSlice(8, n - 8));
    ByteBuf m = ch.readInbound();
    assertEquals(n - WireFormat.LENGTH_FIELD_BYTES, m.readableBytes());
    assertEquals(WireFormat.LEAVE, m.readByte());
    assertEquals(0x1234L, m.readLongLE());
    m.release();
    whole.release();
    assertFalse(ch.finishAndReleaseAll());
  }

  @Test
  void decoderShouldRejectALengthAboveTheLimitBeforeBufferingIt() {
    EmbeddedChannel ch = new EmbeddedChannel(NettyPipelines.frameDecoder());
    ByteBuf huge = Unpooled.buffer().writeIntLE(WireFormat.MAX_MESSAGE_BYTES + 1).writeByte(WireFormat.DATA);
    assertThrows(TooLongFrameException.class, () -> ch.writeInbound(huge));
    assertFalse(ch.finishAndReleaseAll());
  }
}
