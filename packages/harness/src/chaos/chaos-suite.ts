/**
 * The hooks of a chaos test file: build the demo and the `sluice` processes, create its namespaces (or say why the file
 * skips), kill what a test left running, and check at the end that nothing is left: no
 * namespace, so no nftables table, qdisc or veth either.
 */
import { spawnSync } from "node:child_process";
import { afterAll, afterEach, beforeAll, expect, type TestContext } from "vitest";
import { NetworkNamespaces } from "../testing/network-namespaces.js";
import { killTrackedProcesses } from "../testing/tracked-process.js";
import { buildIfStale } from "../testing/workspace-build.js";
import { type ChaosCluster, removeCheckpoints } from "./chaos-cluster.js";

/** Why the loss or bandwidth faults cannot be applied (no `nft`, no `tc`), or undefined. */
function faultToolMissing(): string | undefined {
  if (spawnSync("nft", ["--version"], { stdio: "ignore" }).error !== undefined) {
    return "the packet-loss faults need nftables' nft (apt-get install nftables)";
  }
  if (spawnSync("tc", ["-V"], { stdio: "ignore" }).error !== undefined) {
    return "the bandwidth faults need iproute2's tc (apt-get install iproute2)";
  }
  return undefined;
}

/** A chaos file's namespaces and the clusters its tests started. */
export interface ChaosSuite {
  /** The namespaces; call only in a test that did not skip ({@link ChaosSuite.skipIfUnavailable}). */
  network(): NetworkNamespaces;
  /** Skips the test, printing why, where namespaces cannot be created; true when it skipped. */
  skipIfUnavailable(context: TestContext): boolean;
  /** Registers a cluster so that its checkpoint folder is removed after the test. */
  track(cluster: ChaosCluster): ChaosCluster;
}

/** Sets up a chaos test file: `prefix` and `subnet` must be unique to it. */
export function useChaosSuite(prefix: string, subnet: string, workers = 3): ChaosSuite {
  let network: NetworkNamespaces | undefined;
  let unavailable: string | undefined;
  const clusters: ChaosCluster[] = [];
  beforeAll(() => {
    // The demo's job module and the sluice processes run compiled JavaScript.
    buildIfStale("@sluice/demo", ["apps/demo", "apps/corpus", "packages/cluster"]);
    const created = faultToolMissing() ?? NetworkNamespaces.create({ prefix, subnet, workers });
    if (typeof created === "string") {
      unavailable = created;
      console.warn(`chaos tests skipped: ${unavailable}`);
    } else {
      network = created;
      console.log(
        `${network.describe()}\n  job manager in the hub, task managers in w1 and w2, replacements in w3`,
      );
    }
  }, 300_000);
  afterEach(() => {
    killTrackedProcesses();
    for (const cluster of clusters.splice(0)) removeCheckpoints(cluster);
    // A scenario that failed during a cut left its link down: the next one starts connected.
    for (const worker of network?.workers ?? []) network?.reconnect(worker);
  });
  afterAll(() => {
    if (network === undefined) return;
    network.remove();
    expect(network.remaining()).toEqual([]);
  });
  return {
    network: () => network as NetworkNamespaces,
    skipIfUnavailable(context) {
      if (unavailable === undefined) return false;
      context.skip(unavailable);
      return true;
    },
    track(cluster) {
      clusters.push(cluster);
      return cluster;
    },
  };
}
