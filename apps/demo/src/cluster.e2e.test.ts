/**
 * The demo as a thin client of a session cluster on one host: `sluice jobmanager` and two `sluice
 * taskmanager --usrlib apps/demo/dist` processes started as separate commands on 127.0.0.1, and
 * the demo with `--jobmanager` submitting the word count to the job manager's REST endpoint. (The
 * processes' own behaviour — registration, heartbeats, plugin checks — is tested in
 * packages/cluster; across real network namespaces: multi-host.e2e.test.ts.)
 */

import { createTestPki, type TestPki } from "@sluice/core/test-certificates";
import { freePort } from "@sluice/core/testing";
import { afterAll, describe, expect, it } from "vitest";
import {
  isAlive,
  lastJsonLine,
  startDemo,
  startSessionCluster,
  useDemoProcesses,
} from "./test-support/demo-process.js";

useDemoProcesses();

describe("the demo on a session cluster of sluice processes on 127.0.0.1", () => {
  it.each(["tcp", "ws"])(
    "submits the word count over %s to the job manager's REST endpoint and verifies it; the session cluster runs on and stops on SIGTERM",
    async (shuffle) => {
      const cluster = await startSessionCluster({
        rpcPort: await freePort(),
        restPort: await freePort(),
        configuration: ["-D", `shuffle-service-factory.class=${shuffle}`],
      });
      const run = await startDemo([
        "--jobmanager",
        `127.0.0.1:${cluster.restPort}`,
        "--records",
        "40k",
        "--json",
      ]).done;
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain("verified");
      expect(lastJsonLine(run.stdout)).toMatchObject({
        verified: true,
        records: 40_000,
        taskManagers: 2,
      });
      // A session cluster outlives its jobs: every process still runs, until it is stopped.
      for (const p of cluster.processes) expect(p.output().code).toBeNull();
      for (const p of cluster.processes) p.child.kill("SIGTERM");
      for (const p of cluster.processes) {
        const end = await p.done;
        expect(end.code, end.stderr).toBe(143);
        expect(isAlive(p.child.pid as number)).toBe(false);
      }
    },
    60_000,
  );
});

describe("one-command demo with internal TLS", () => {
  let pki: TestPki | undefined;
  afterAll(() => pki?.remove());

  it("runs verified with the control plane and the data plane mutually authenticated by the same certificates", async () => {
    pki = createTestPki("demo");
    const identity = pki.issue("cluster");
    const run = await startDemo([
      "--records",
      "20k",
      "--shuffle",
      "ws",
      "-D",
      "security.ssl.internal.enabled=true",
      "-D",
      `security.ssl.internal.ca=${pki.caCert}`,
      "-D",
      `security.ssl.internal.key=${identity.key}`,
      "-D",
      `security.ssl.internal.cert=${identity.cert}`,
      "--json",
    ]).done;
    expect(run.code).toBe(0);
    expect(lastJsonLine(run.stdout)).toMatchObject({ verified: true, buffersReturned: true });
  }, 60_000);
});
