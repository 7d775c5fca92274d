import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "@sluice/ha-etcd/testing";
import { Configuration } from "@sluice/runtime";
import type { HighAvailabilityServices } from "@sluice/runtime-api";
import { readableConfigOf } from "@sluice/runtime-api";
import { RemoteShuffleMaster } from "@sluice/shuffle-remote";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SluiceProcess } from "../sluice-process.js";
import { publishLeader } from "../test-support/published-leader.js";

const reason = etcdUnavailableReason();
if (reason !== undefined) console.warn(`skipping the shuffle worker's leader tests: ${reason}`);

describe.skipIf(reason !== undefined)("sluice shuffleworker following the leader", () => {
  let etcd: EtcdServer | undefined;
  let folder = "";
  let run = 0;
  const services: HighAvailabilityServices[] = [];
  const masters: RemoteShuffleMaster[] = [];
  const workers: SluiceProcess[] = [];
  beforeAll(async () => {
    etcd = await startEtcd();
    folder = mkdtempSync(path.join(tmpdir(), "sluice-shuffle-worker-command-"));
  }, 30_000);
  afterEach(async () => {
    for (const worker of workers) worker.kill();
    await Promise.all(workers.splice(0).map((worker) => worker.exited));
    await Promise.all(services.splice(0).map((opened) => opened.close()));
    await Promise.all(masters.splice(0).map((master) => master.close()));
    run++;
  });
  afterAll(async () => {
    await etcd?.stop();
    if (folder !== "") rmSync(folder, { recursive: true, force: true });
  });
  const haSettings = () => ({
    "high-availability.type": "etcd",
    "high-availability.etcd.endpoints": (etcd as EtcdServer).endpoint,
    "high-availability.storageDir": folder,
    "high-availability.cluster-id": `shuffle-worker-${process.pid}-${run}`,
    "high-availability.etcd.lease-ttl": "2s",
  });

  /** A job manager's services that, once elected, publish `shuffleMasterAddress`. */
  const candidate = async (shuffleMasterAddress: string) => {
    const opened = await publishLeader(new Configuration(haSettings()), { shuffleMasterAddress });
    services.push(opened);
    return opened;
  };

  it("waits for the next leader when the leader publishes a malformed shuffle manager address, then registers with the next leader's manager", async () => {
    const master = new RemoteShuffleMaster({
      configuration: readableConfigOf({
        "remote-shuffle.manager.rpc-address": "127.0.0.1",
        "remote-shuffle.manager.rpc-port": 0,
      }),
      onFatalError: (error) => {
        throw error;
      },
    });
    masters.push(master);
    await master.start();
    const malformed = await candidate("127.0.0.1:not-a-port");

    const lines: string[] = [];
    const output = () => lines.join("\n");
    const settings: Record<string, string> = {
      ...haSettings(),
      "io.tmp.dirs": folder,
      "remote-shuffle.worker.memory.writing-size": "8mb",
      "remote-shuffle.worker.memory.reading-size": "4mb",
      "taskmanager.memory.segment-size": "8kb",
    };
    const worker = new SluiceProcess(
      "shuffleworker",
      Object.entries(settings).flatMap(([key, value]) => ["-D", `${key}=${value}`]),
      { output: (line) => lines.push(line) },
    );
    workers.push(worker);
    await waitFor(() => output().includes("waiting for the next leader") || worker.hasExited, {
      what: "the worker to read the malformed address",
      timeoutMs: 30_000,
    });
    expect(output()).toContain(
      `warning: the leader's shuffle manager address expects host:port (e.g. 10.0.0.1:6123 or [::1]:6123), got "127.0.0.1:not-a-port": waiting for the next leader`,
    );
    // It stays up, serving its own ports, and follows no manager.
    await waitFor(() => output().includes("shuffle worker (pid ") || worker.hasExited, {
      what: "the worker to be ready",
      timeoutMs: 30_000,
    });
    expect(worker.hasExited, output()).toBe(false);
    expect(output()).not.toContain("registering with");
    expect(master.registeredWorkers()).toEqual([]);

    // The malformed leader resigns; the next one publishes its manager's real address.
    const address = master.getAdvertisedAddress() as string;
    await candidate(address);
    await malformed.close();
    await waitFor(() => master.registeredWorkers().length === 1 || worker.hasExited, {
      what: "the worker to register with the next leader's manager",
      timeoutMs: 30_000,
    });
    expect(worker.hasExited, output()).toBe(false);
    expect(master.registeredWorkers()).toHaveLength(1);
    expect(output()).toContain(
      `registering with the leading job manager's shuffle manager at ${address}`,
    );
  }, 60_000);
});
