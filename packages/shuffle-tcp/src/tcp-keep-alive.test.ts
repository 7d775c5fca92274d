import { describeKeepAliveSuite } from "@sluice/shuffle-tck/transport";
import { TCP_PLUGIN } from "./test-support/plugin.js";

describeKeepAliveSuite("TCP", TCP_PLUGIN);
