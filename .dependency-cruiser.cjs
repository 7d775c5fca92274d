// Layers of @sluice/runtime (docs/architecture.md draws them): a folder may import its own
// layer and the layers below it, never one above. Lower to higher:
//   ground (config, loader, metrics, clock, util) < partitioner, io < messages < checkpointing
//   < taskexecutor < jobmaster (jobmaster/checkpoints is part of the job master).
// The package's index.ts and tools/ (the docs generator) may import anything. Tests and their
// test-support/ helpers are outside the rule: an integration test of a lower folder may start
// a whole local cluster.
const SRC = "^packages/runtime/src/";
const LAYERS = [
  { name: "ground", folders: ["config", "loader", "metrics", "clock", "util"] },
  { name: "partitioner-io", folders: ["partitioner", "io"] },
  { name: "messages", folders: ["messages"] },
  { name: "checkpointing", folders: ["checkpointing"] },
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

module.exports = {
  forbidden: [
    ...upward,
    {
      name: "runtime-checkpointing-not-through-record-writer",
      comment:
        "checkpointing emits barriers through its CheckpointEventEmitter interface, not through io's RecordWriter",
      severity: "error",
      from: { path: inFolders(["checkpointing"]), pathNot: NOT_RULED },
      to: { path: `${SRC}io/` },
    },
    {
      name: "runtime-not-unresolvable",
      comment: "an import the checker cannot resolve would slip past the layer rules",
      severity: "error",
      from: { path: SRC },
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
