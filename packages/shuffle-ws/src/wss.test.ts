import { describeNetworkTlsSuite } from "@sluice/shuffle-tck/transport";
import { WS_PLUGIN } from "./test-support/plugin.js";

describeNetworkTlsSuite("WebSocket (wss)", WS_PLUGIN);
