import { ConfigurationError } from "@sluice/core";
import {
  NetworkShuffleServiceFactory,
  readKeepAliveDelay,
  readTlsSettings,
  type Transport,
} from "@sluice/network/plugin";
import type { ConfigOption, ShuffleEnvironmentContext } from "@sluice/runtime-api";
import { WebSocketOptions } from "./websocket-options.js";
import { WsTransport } from "./ws-transport.js";

/**
 * The WebSocket shuffle plugin (`shuffle-service-factory.class: ws`, or
 * `@sluice/shuffle-ws#WsShuffleServiceFactory`): the same credit-based shuffle as the TCP
 * plugin, over `ws`. Reads `taskmanager.network.websocket.*` (permessage-deflate, high and low
 * water marks, upgrade timeout) and `security.ssl.internal.*` (wss with mutual TLS) from the worker's configuration.
 */
export class WsShuffleServiceFactory extends NetworkShuffleServiceFactory {
  /** `taskmanager.network.websocket.*`: see {@link WebSocketOptions}. */
  readonly configOptions: readonly ConfigOption<unknown>[] = Object.values(WebSocketOptions);

  /** @throws ConfigurationError when the low-water mark is not below the high-water mark. */
  protected createTransport(context: ShuffleEnvironmentContext): Transport {
    const config = context.configuration;
    const highWaterMark = config.get(WebSocketOptions.HIGH_WATER_MARK);
    const lowWaterMark = config.get(WebSocketOptions.LOW_WATER_MARK);
    if (lowWaterMark >= highWaterMark) {
      throw new ConfigurationError(
        `${WebSocketOptions.LOW_WATER_MARK.key} (${lowWaterMark} bytes) must be below ` +
          `${WebSocketOptions.HIGH_WATER_MARK.key} (${highWaterMark} bytes)`,
      );
    }
    return new WsTransport({
      perMessageDeflate: config.get(WebSocketOptions.PER_MESSAGE_DEFLATE),
      highWaterMark,
      lowWaterMark,
      handshakeTimeoutMs: config.get(WebSocketOptions.HANDSHAKE_TIMEOUT),
      tls: readTlsSettings(config),
      keepAliveDelayMs: readKeepAliveDelay(config),
    });
  }
}

export default WsShuffleServiceFactory;
