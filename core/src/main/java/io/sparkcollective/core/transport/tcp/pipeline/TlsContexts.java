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

  private TlsContexts(SslContext server, SslContext client) {
    this.server = server;
    this.client = client;
  }

  static TlsContexts from(CollectiveConfig config) {
    String type = config.get(CollectiveConfig.TLS_KEY_STORE_TYPE).trim();
    String protocol = config.get(CollectiveConfig.TLS_PROTOCOL).trim();
    char[] keyPassword = config.get(CollectiveConfig.TLS_KEY_STORE_PASSWORD).toCharArray();
    KeyStore keys = load(CollectiveConfig.TLS_KEY_STORE, config.get(CollectiveConfig.TLS_KEY_STORE), type, keyPassword);
    KeyStore trust = load(CollectiveConfig.TLS_TRUST_STORE, config.get(CollectiveConfig.TLS_TRUST_STORE), type,
        config.get(CollectiveConfig.TLS_TRUST_STORE_PASSWORD).toCharArray());
    try {
      KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, keyPassword);
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      SslContext server = SslContextBuilder.forServer(kmf).trustManager(tmf).clientAuth(ClientAuth.REQUIRE)
          .sslProvider(SslProvider.JDK).protocols(protocol).build();
      SslContextBuilder clientBuilder = SslContextBuilder.forClient().keyManager(kmf).trustManager(tmf)
          .sslProvider(SslProvider.JDK).protocols(protocol);
      disableHostnameCheck(clientBuilder);
      SslContext client = clientBuilder.build();
      return new TlsContexts(server, client);
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
   * Peers are authenticated by mutual certificate trust and the shared secret, not by host name: executors
   * are dialled by IP address, which certificates rarely name. Netty 4.2 turns host name checks on by
   * default; this keeps both Netty lines alike.
   */
  static SslHandler withoutHostnameCheck(SslHandler handler) {
    SSLParameters p = handler.engine().getSSLParameters();
    p.setEndpointIdentificationAlgorithm(null);
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
