import { describeKeepAliveSuite } from "@sluice/shuffle-tck/transport";
import { WS_PLUGIN } from "./test-support/plugin.js";

describeKeepAliveSuite("WebSocket", WS_PLUGIN);
