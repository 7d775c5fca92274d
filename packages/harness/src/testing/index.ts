/**
 * `@sluice/harness/testing`: what this repository's multi-process end-to-end tests share — child
 * processes whose output a test reads (and none outlives its test), builds of what they run, and
 * network namespaces with faults on their links. Imports vitest; no program imports it.
 */
export {
  type NamespaceHost,
  NetworkNamespaces,
  type NetworkNamespacesOptions,
} from "./network-namespaces.js";
export {
  isAlive,
  killTrackedProcesses,
  lastJsonLine,
  type ProcessRun,
  startProcess,
  type TrackedProcess,
  useTrackedProcesses,
} from "./tracked-process.js";
export { buildIfStale, REPO } from "./workspace-build.js";
