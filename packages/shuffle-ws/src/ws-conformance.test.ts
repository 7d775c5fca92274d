import { fileURLToPath } from "node:url";
import { describeShuffleServiceConformance } from "@sluice/shuffle-tck";

// Worker processes run the built plugin, selected only through configuration.
const pluginEntry = fileURLToPath(new URL("../dist/index.js", import.meta.url));

describeShuffleServiceConformance({
  name: "ws",
  factory: `${pluginEntry}#WsShuffleServiceFactory`,
});
