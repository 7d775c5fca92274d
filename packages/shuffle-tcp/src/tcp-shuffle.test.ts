import { describeTransportSuite } from "@sluice/shuffle-tck/transport";
import { TCP_PLUGIN } from "./test-support/plugin.js";

describeTransportSuite({ name: "TCP", factory: TCP_PLUGIN });
