import { describeShuffleServiceConformance } from "@sluice/shuffle-tck";
import { WS_PLUGIN } from "./test-support/plugin.js";

describeShuffleServiceConformance({ name: "ws", factory: WS_PLUGIN });
