import { describeShuffleServiceConformance } from "@sluice/shuffle-tck";
import { TCP_PLUGIN } from "./test-support/plugin.js";

// The same suite with every worker's slots on threads: a task's partitions and gates live on a
// slot thread, channels between slots go through shared memory, and each worker's data server
// (its main thread) serves every slot's partitions.
describeShuffleServiceConformance({
  name: "tcp-threaded",
  factory: TCP_PLUGIN,
  configuration: {
    "taskmanager.task-slots.mode": "threaded",
    "taskmanager.numberOfTaskSlots": 2,
  },
});
