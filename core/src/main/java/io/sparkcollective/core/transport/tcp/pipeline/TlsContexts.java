package io.sparkcollective.core.transport.tcp.pipeline;

import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.sparkcollective.core.api.CollectiveUsageException;
import io.sparkcollective.core.config.CollectiveConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

/**
 * Server and client TLS contexts from the {@code transport.tls.*} settings: the JDK provider, mutual
 * authentication (each side must present a certificate the other's trust store accepts).
 */
final class TlsContexts {
  final SslContext server;
  final SslContext client;
  /** Whether the dialling side checks that the peer's certificate names the address it dialled. */
  final boolean verifyPeerName;

  private TlsContexts(SslContext server, SslContext client, boolean verifyPeerName) {
    this.server = server;
    this.client = client;
    this.verifyPeerName = verifyPeerName;
  }

  static TlsContexts from(CollectiveConfig config) {
    String type = config.get(CollectiveConfig.TLS_KEY_STORE_TYPE).trim();
    String protocol = config.get(CollectiveConfig.TLS_PROTOCOL).trim();
    char[] storePassword = config.get(CollectiveConfig.TLS_KEY_STORE_PASSWORD).toCharArray();
    String ownKeyPassword = config.get(CollectiveConfig.TLS_KEY_PASSWORD);
    char[] keyPassword = ownKeyPassword.isEmpty() ? storePassword : ownKeyPassword.toCharArray();
    java.util.List<String> ciphers = new java.util.ArrayList<>();
    for (String c : config.get(CollectiveConfig.TLS_ENABLED_ALGORITHMS).split(",")) {
      if (!c.trim().isEmpty()) {
        ciphers.add(c.trim());
      }
    }
    KeyStore keys = load(CollectiveConfig.TLS_KEY_STORE, config.get(CollectiveConfig.TLS_KEY_STORE), type,
        storePassword);
    KeyStore trust = load(CollectiveConfig.TLS_TRUST_STORE, config.get(CollectiveConfig.TLS_TRUST_STORE), type,
        config.get(CollectiveConfig.TLS_TRUST_STORE_PASSWORD).toCharArray());
    try {
      KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, keyPassword);
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      SslContext server = SslContextBuilder.forServer(kmf).trustManager(tmf).clientAuth(ClientAuth.REQUIRE)
          .sslProvider(SslProvider.JDK).protocols(protocol).ciphers(ciphers.isEmpty() ? null : ciphers).build();
      SslContextBuilder clientBuilder = SslContextBuilder.forClient().keyManager(kmf).trustManager(tmf)
          .sslProvider(SslProvider.JDK).protocols(protocol).ciphers(ciphers.isEmpty() ? null : ciphers);
      disableHostnameCheck(clientBuilder);
      SslContext client = clientBuilder.build();
      return new TlsContexts(server, client,
          Boolean.parseBoolean(config.get(CollectiveConfig.TLS_VERIFY_PEER_NAME).trim()));
    } catch (GeneralSecurityException | IOException | IllegalArgumentException e) {
      throw new CollectiveUsageException("cannot set up TLS (" + CollectiveConfig.SPARK_PREFIX + "transport.tls.*): "
          + e);
    }
  }

  /**
   * Netty 4.2 checks the server's host name by default (4.1 has no such setting): turn it off there too.
   * See {@link #withoutHostnameCheck}.
   */
  private static void disableHostnameCheck(SslContextBuilder builder) {
    try {
      SslContextBuilder.class.getMethod("endpointIdentificationAlgorithm", String.class)
          .invoke(builder, (Object) null);
    } catch (NoSuchMethodException e) {
      // Netty 4.1: no host name check to turn off.
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot configure TLS host name checks", e);
    }
  }

  /**
   * The dialling side's handler: with {@code transport.tls.verifyPeerName} the peer's certificate must name
   * the host the handler was made for (as HTTPS clients check: a DNS or IP subject alternative name), else
   * any certificate the trust store accepts passes. Set on the engine, so both Netty lines (4.2 checks by
   * default, 4.1 has no such setting) behave alike.
   */
  SslHandler dialling(SslHandler handler) {
    SSLParameters p = handler.engine().getSSLParameters();
    p.setEndpointIdentificationAlgorithm(verifyPeerName ? "HTTPS" : null);
    handler.engine().setSSLParameters(p);
    return handler;
  }

  private static KeyStore load(String key, String path, String type, char[] password) {
    try (InputStream in = Files.newInputStream(Paths.get(path.trim()))) {
      KeyStore ks = KeyStore.getInstance(type);
      ks.load(in, password);
      return ks;
    } catch (IOException | GeneralSecurityException e) {
      throw new CollectiveUsageException("cannot load " + CollectiveConfig.SPARK_PREFIX + key + " '" + path + "' as "
          + type + ": " + e.getMessage());
    }
  }
}
