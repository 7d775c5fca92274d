import {
  NetworkShuffleServiceFactory,
  readKeepAliveDelay,
  readTlsSettings,
  type Transport,
} from "@sluice/network/plugin";
import type { ShuffleEnvironmentContext } from "@sluice/runtime-api";
import { TcpTransport } from "./tcp-transport.js";

/**
 * The default shuffle plugin (`shuffle-service-factory.class: tcp`, or
 * `@sluice/shuffle-tcp#TcpShuffleServiceFactory`): Flink's Netty shuffle with credit-based flow
 * control, over TCP — with mutual TLS when `security.ssl.internal.enabled` is set.
 */
export class TcpShuffleServiceFactory extends NetworkShuffleServiceFactory {
  protected createTransport(context: ShuffleEnvironmentContext): Transport {
    return new TcpTransport({
      tls: readTlsSettings(context.configuration),
      keepAliveDelayMs: readKeepAliveDelay(context.configuration),
    });
  }
}
