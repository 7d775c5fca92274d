import { describeNetworkTlsSuite } from "@sluice/shuffle-tck/transport";
import { TCP_PLUGIN } from "./test-support/plugin.js";

describeNetworkTlsSuite("TCP", TCP_PLUGIN);
