/**
 * @sluice/shuffle-tcp: the default Sluice shuffle plugin. Select it with
 * `shuffle-service-factory.class: tcp` (or `@sluice/shuffle-tcp#TcpShuffleServiceFactory`).
 */
export { TcpConnection } from "./tcp-connection.js";
export {
  TcpShuffleServiceFactory,
  TcpShuffleServiceFactory as default,
} from "./tcp-shuffle-service-factory.js";
export { TcpTransport, type TcpTransportOptions } from "./tcp-transport.js";
