/**
 * @sluice/shuffle-ws: the Sluice shuffle over WebSocket (`ws`). Select it with
 * `shuffle-service-factory.class: ws` (or `@sluice/shuffle-ws#WsShuffleServiceFactory`).
 */
export { WebSocketOptions } from "./websocket-options.js";
export { WsConnection, type WsConnectionOptions } from "./ws-connection.js";
export {
  WsShuffleServiceFactory,
  WsShuffleServiceFactory as default,
} from "./ws-shuffle-service-factory.js";
export { WS_SHUFFLE_PATH, WsTransport, type WsTransportOptions } from "./ws-transport.js";
