import { describeNetworkTlsSuite } from "@sluice/network/testing";
import { WsShuffleServiceFactory } from "./ws-shuffle-service-factory.js";

describeNetworkTlsSuite("WebSocket (wss)", (context) =>
  new WsShuffleServiceFactory().createShuffleEnvironment(context),
);
