import { describeNetworkTlsSuite } from "@sluice/network/testing";
import { TcpShuffleServiceFactory } from "./tcp-shuffle-service-factory.js";

describeNetworkTlsSuite("TCP", (context) =>
  new TcpShuffleServiceFactory().createShuffleEnvironment(context),
);
