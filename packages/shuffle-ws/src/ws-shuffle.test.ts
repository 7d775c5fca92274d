import { describeTransportSuite } from "@sluice/shuffle-tck/transport";
import { WS_PLUGIN } from "./test-support/plugin.js";

describeTransportSuite({
  name: "WebSocket",
  factory: WS_PLUGIN,
  variants: [
    {
      name: "tiny water marks and a slow consumer (backpressure through onDrain)",
      configuration: {
        "taskmanager.network.websocket.high-water-mark": "16kb",
        "taskmanager.network.websocket.low-water-mark": "4kb",
      },
      consume: { slowdownMs: 1 },
    },
    {
      name: "permessage-deflate on both sides",
      configuration: { "taskmanager.network.websocket.per-message-deflate": true },
    },
  ],
});
