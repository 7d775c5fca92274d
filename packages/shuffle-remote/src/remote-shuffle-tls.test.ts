import { ErrorCodes } from "@sluice/core";
import { createTestPki, type TestPki } from "@sluice/core/test-certificates";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  partitionDescriptor,
  RemoteShuffleHarness,
  readPartition,
  recordsOf,
  register,
  writePartition,
} from "./test-support/remote-shuffle-harness.js";

let pki: TestPki;
let harness: RemoteShuffleHarness | undefined;

beforeAll(() => {
  pki = createTestPki("remote-shuffle");
}, 30_000);
afterAll(() => pki?.remove());
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

function tls(ca: string, name: string): Record<string, unknown> {
  const { key, cert } = pki.issue(name);
  return {
    "security.ssl.internal.enabled": true,
    "security.ssl.internal.key": key,
    "security.ssl.internal.cert": cert,
    "security.ssl.internal.ca": ca,
  };
}

describe("remote shuffle over mutual TLS (security.ssl.internal.*)", () => {
  it("registers, pushes, checks and reads over TLS when every side trusts the same CA", async () => {
    harness = await RemoteShuffleHarness.start(tls(pki.caCert, "cluster"));
    await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(2);
    const descriptor = await register(harness, partition);
    const records = [recordsOf(0, 2_000), recordsOf(1, 1_000)];
    await writePartition(environment, partition, descriptor, records);
    const read = await readPartition(environment, partition, descriptor, 2);
    expect(read).toEqual(records.map((r) => Buffer.concat(r)));
  }, 60_000);

  it("refuses a producer whose certificate another CA signed: its push fails with SLUICE_ERR_PARTITION_CONNECTION", async () => {
    harness = await RemoteShuffleHarness.start(tls(pki.caCert, "cluster"));
    await harness.startWorker();
    const other = createTestPki("remote-shuffle-other");
    try {
      const { key, cert } = other.issue("stranger");
      const environment = await harness.startEnvironment({
        "security.ssl.internal.key": key,
        "security.ssl.internal.cert": cert,
        "security.ssl.internal.ca": other.caCert,
      });
      const partition = partitionDescriptor(1);
      const descriptor = await register(harness, partition);
      await expect(
        writePartition(environment, partition, descriptor, [recordsOf(0, 10)]),
      ).rejects.toMatchObject({ code: ErrorCodes.PARTITION_CONNECTION });
    } finally {
      other.remove();
    }
  }, 60_000);
});
