import { NetworkShuffleServiceFactory, type Transport } from "@sluice/network";
import type { ShuffleEnvironmentContext } from "@sluice/runtime-api";
import { TcpTransport } from "./tcp-transport.js";

/**
 * The default shuffle plugin (`shuffle-service-factory.class: tcp`, or
 * `@sluice/shuffle-tcp#TcpShuffleServiceFactory`): Flink's Netty shuffle with credit-based flow
 * control, over plain TCP sockets.
 */
export class TcpShuffleServiceFactory extends NetworkShuffleServiceFactory {
  protected createTransport(_context: ShuffleEnvironmentContext): Transport {
    return new TcpTransport();
  }
}

export default TcpShuffleServiceFactory;
