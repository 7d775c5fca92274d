import { describeShuffleServiceConformance } from "@sluice/shuffle-tck";
import { REMOTE_PLUGIN } from "./test-support/plugin.js";

// The ShuffleMaster in the test process starts two shuffle worker processes; the suite's task
// manager processes push to them and read from them.
describeShuffleServiceConformance({
  name: "remote",
  factory: REMOTE_PLUGIN,
  blockingOnly: true,
  configuration: {
    "remote-shuffle.manager.rpc-port": 0,
    "remote-shuffle.manager.embedded-workers": 2,
    "remote-shuffle.worker.memory.writing-size": "32mb",
    "taskmanager.network.sort-shuffle.min-buffers": 64,
  },
});
