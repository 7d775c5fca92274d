import { describeShuffleServiceConformance } from "@sluice/shuffle-tck";
import { TCP_PLUGIN } from "./test-support/plugin.js";

describeShuffleServiceConformance({ name: "tcp", factory: TCP_PLUGIN });
