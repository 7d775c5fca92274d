import { describeBlockingTransportSuite } from "@sluice/shuffle-tck/transport";
import { TCP_PLUGIN } from "./test-support/plugin.js";

describeBlockingTransportSuite({ name: "TCP", factory: TCP_PLUGIN });
