// Import rules checked in CI (`pnpm deps:check`).
// Layers of @sluice/runtime (docs/architecture.md draws them): a folder may import its own
// layer and the layers below it, never one above. Lower to higher:
//   ground (config, loader, metrics, clock, util) < partitioner, io < messages < checkpointing
//   < state < taskexecutor < jobmaster (jobmaster/checkpoints is part of the job master).
// The package's index.ts and tools/ (the docs generator) may import anything. Tests and their
// test-support/ helpers are outside the rule: an integration test of a lower folder may start
// a whole local cluster.
const SRC = "^packages/runtime/src/";
const LAYERS = [
  { name: "ground", folders: ["config", "loader", "metrics", "clock", "util"] },
  { name: "partitioner-io", folders: ["partitioner", "io"] },
  { name: "messages", folders: ["messages"] },
  { name: "checkpointing", folders: ["checkpointing"] },
  { name: "state", folders: ["state"] },
  { name: "taskexecutor", folders: ["taskexecutor"] },
  { name: "jobmaster", folders: ["jobmaster"] },
];
const inFolders = (folders) => `${SRC}(${folders.join("|")})/`;
const NOT_RULED = ["\\.test\\.ts$", "/test-support/"];

const upward = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `runtime-no-upward-import-from-${layer.name}`,
  comment: `${layer.folders.join(", ")} must not import a higher layer of @sluice/runtime`,
  severity: "error",
  from: { path: inFolders(layer.folders), pathNot: NOT_RULED },
  to: { path: inFolders(LAYERS.slice(i + 1).flatMap((l) => l.folders)) },
}));

// @sluice/network: the consumer side (channels, gates) is used by the connection code, never the
// other way; the wire protocol knows neither; server and client share only the transport seam.
const NET = "^packages/network/src/";
const network = [
  [
    "consumer-not-to-netty",
    "consumer",
    "netty",
    "the consumer side reaches netty/ only through its own interfaces",
  ],
  [
    "protocol-alone",
    "protocol",
    "(consumer|netty|partition|environment)",
    "the wire protocol knows no other part",
  ],
  [
    "server-not-to-client",
    "netty/server",
    "netty/client",
    "the data server and client share only transport/",
  ],
  [
    "client-not-to-server",
    "netty/client",
    "netty/server",
    "the data client and server share only transport/",
  ],
  [
    "transport-alone",
    "netty/transport",
    "(netty/(server|client)|consumer|partition|protocol|environment)",
    "the transport seam depends on nothing of the network stack",
  ],
  [
    "environment-on-top",
    "(consumer|netty|protocol|threads)",
    "environment",
    "only the environment wires the parts together",
  ],
  [
    "threads-below-connections",
    "threads",
    "(consumer|netty|protocol)",
    "the channels between slot threads know partitions and views, not gates or connections",
  ],
  [
    "nothing-below-on-threads",
    "(consumer|netty|protocol|partition)",
    "threads",
    "only the environment wires the threads' provider in",
  ],
].map(([name, from, to, comment]) => ({
  name: `network-${name}`,
  comment,
  severity: "error",
  from: { path: `${NET}${from}/`, pathNot: NOT_RULED },
  to: { path: `${NET}${to}/` },
}));

module.exports = {
  forbidden: [
    ...upward,
    ...network,
    {
      name: "runtime-checkpointing-not-through-record-writer",
      comment:
        "checkpointing emits barriers through its CheckpointEventEmitter interface, not through io's RecordWriter",
      severity: "error",
      from: { path: inFolders(["checkpointing"]), pathNot: NOT_RULED },
      to: { path: `${SRC}io/` },
    },
    {
      name: "not-unresolvable",
      comment: "an import the checker cannot resolve would slip past the layer rules",
      severity: "error",
      from: { path: [SRC, NET] },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["(^|/)dist/", "(^|/)node_modules/"] },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["@sluice/source", "import", "types", "default"],
    },
  },
};
