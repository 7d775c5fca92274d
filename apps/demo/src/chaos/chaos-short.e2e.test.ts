/**
 * The chaos suite's short version, run with the normal tests (the full one is `pnpm test:chaos`):
 * one job across network namespaces that goes through 2% packet loss on one task manager's
 * link, a 5 s cut of the other's, and a 5 s SIGSTOP of a task manager, and ends verified
 * exactly once with nothing left behind.
 */
import { expect, it } from "vitest";
import type { DemoProcess } from "../test-support/demo-process.js";
import type { NamespaceHost } from "../test-support/network-namespaces.js";
import {
  checkpointAfter,
  cutFor,
  expectVerified,
  jobEnd,
  pauseFor,
  printResult,
  resultOf,
  startChaosCluster,
} from "./chaos-cluster.js";
import { useChaosSuite } from "./chaos-suite.js";

const suite = useChaosSuite("slc-chaos-ci", "10.79.0", 2);
const RECORDS = 1_000_000;

it("a job through 2% loss, a 5 s cut and a 5 s SIGSTOP ends verified exactly once, with no restart", async (context) => {
  if (suite.skipIfUnavailable(context)) return;
  const network = suite.network();
  const [first, second] = network.workers as [NamespaceHost, NamespaceHost];
  network.applyLoss(second, 2);
  const cluster = suite.track(startChaosCluster(network, RECORDS, ["--duration", "18"]));
  let latest = await checkpointAfter(cluster, 0, 60_000, "a first checkpoint");

  const reconnectedAt = await cutFor(network, first, 5_000);
  latest = await checkpointAfter(cluster, latest, 60_000, "a checkpoint after the cut");
  const cutRecoverMs = Date.now() - reconnectedAt;

  const resumedAt = await pauseFor(cluster.tms[1] as DemoProcess, 5_000);
  await checkpointAfter(cluster, latest, 60_000, "a checkpoint after SIGCONT");
  const pauseRecoverMs = Date.now() - resumedAt;

  const summary = await expectVerified(cluster, await jobEnd(cluster, 90_000), RECORDS);
  // Every fault was shorter than heartbeat.timeout (50 s): the job rode them out in place.
  expect(summary.restarts).toBe(0);
  // The loss acted: the nftables rules dropped packets of the job's traffic.
  expect(network.droppedPackets(second)).toBeGreaterThan(0);
  network.removeLoss(second);
  expect(network.nftTables(second)).not.toContain("sluice_chaos");
  printResult(
    resultOf("CI: 2% loss + 5 s cut + 5 s SIGSTOP", summary, { cutRecoverMs, pauseRecoverMs }),
  );
}, 150_000);
