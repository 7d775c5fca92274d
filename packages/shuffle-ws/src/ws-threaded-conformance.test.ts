import { describeShuffleServiceConformance } from "@sluice/shuffle-tck";
import { WS_PLUGIN } from "./test-support/plugin.js";

// The same suite with every worker's slots on threads (see tcp-threaded-conformance.test.ts).
describeShuffleServiceConformance({
  name: "ws-threaded",
  factory: WS_PLUGIN,
  configuration: {
    "taskmanager.task-slots.mode": "threaded",
    "taskmanager.numberOfTaskSlots": 2,
  },
});
