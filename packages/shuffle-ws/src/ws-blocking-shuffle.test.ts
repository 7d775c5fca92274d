import { describeBlockingTransportSuite } from "@sluice/shuffle-tck/transport";
import { WS_PLUGIN } from "./test-support/plugin.js";

describeBlockingTransportSuite({ name: "WebSocket", factory: WS_PLUGIN });
