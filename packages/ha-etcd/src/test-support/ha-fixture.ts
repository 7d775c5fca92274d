import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type LeaderContender, readableConfigOf } from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe } from "vitest";
import { EtcdClient } from "../client/etcd-client.js";
import { EtcdKv } from "../client/etcd-kv.js";
import type { EtcdHighAvailabilityServices } from "../etcd-high-availability-services.js";
import { EtcdHighAvailabilityServicesFactory } from "../etcd-high-availability-services-factory.js";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "../testing/index.js";

/** A contender that records what the election told it. */
export class RecordingContender implements LeaderContender {
  token: string | undefined;
  readonly grants: string[] = [];
  revocations = 0;
  readonly errors: Error[] = [];

  constructor(private readonly onChange: () => void = () => {}) {}

  grantLeadership(fencingToken: string): void {
    this.token = fencingToken;
    this.grants.push(fencingToken);
    this.onChange();
  }

  revokeLeadership(): void {
    this.token = undefined;
    this.revocations++;
    this.onChange();
  }

  handleError(error: Error): void {
    this.errors.push(error);
  }

  get leading(): boolean {
    return this.token !== undefined;
  }
}

/** A real etcd for the tests of one file, and services on it that are closed after each test. */
export interface EtcdFixture {
  readonly etcd: () => EtcdServer;
  /** A folder for `high-availability.storageDir`, removed after the file's tests. */
  readonly storageDir: () => string;
  /** New services on the fixture's etcd (one per simulated job manager). */
  services(overrides?: Readonly<Record<string, string>>): Promise<EtcdHighAvailabilityServices>;
  /** Warnings the services reported. */
  readonly warnings: string[];
  /** The current test's `high-availability.cluster-id`. */
  clusterId(): string;
  /**
   * etcd's key-value API under `namespace` on a client of its own (an operator's view: what an
   * `etcdctl` would see or change), closed after the test.
   */
  kv(namespace?: string): EtcdKv;
}

/**
 * `describe`, against a real etcd the file starts (and stops); skipped with a printed reason when
 * no etcd binary is installed. Every test gets its own `high-availability.cluster-id`.
 */
export function describeWithEtcd(name: string, body: (fixture: EtcdFixture) => void): void {
  const reason = etcdUnavailableReason();
  if (reason !== undefined) {
    console.warn(`skipping "${name}": ${reason}`);
  }
  describe.skipIf(reason !== undefined)(name, () => {
    let server: EtcdServer | undefined;
    let storage: string | undefined;
    const open = new Set<EtcdHighAvailabilityServices>();
    const clients = new Set<EtcdClient>();
    const warnings: string[] = [];
    let cluster = 0;
    const clusterId = () => `test-${process.pid}-${cluster}`;
    beforeAll(async () => {
      server = await startEtcd();
      storage = mkdtempSync(path.join(tmpdir(), "sluice-ha-"));
    }, 30_000);
    afterEach(async () => {
      await Promise.all([...open].map((services) => services.close()));
      open.clear();
      for (const client of clients) client.close();
      clients.clear();
      cluster++;
      warnings.length = 0;
    });
    afterAll(async () => {
      await server?.stop();
      if (storage !== undefined) rmSync(storage, { recursive: true, force: true });
    });
    const fixture: EtcdFixture = {
      etcd: () => server as EtcdServer,
      storageDir: () => storage as string,
      warnings,
      clusterId,
      kv: (namespace = "") => {
        const client = new EtcdClient({
          endpoints: [(server as EtcdServer).endpoint],
          requestTimeoutMs: 10_000,
        });
        clients.add(client);
        return new EtcdKv(client, namespace);
      },
      services: async (overrides = {}) => {
        const configuration = readableConfigOf({
          "high-availability.type": "etcd",
          "high-availability.etcd.endpoints": (server as EtcdServer).endpoint,
          "high-availability.storageDir": storage as string,
          "high-availability.cluster-id": clusterId(),
          "high-availability.etcd.lease-ttl": "2s",
          ...overrides,
        });
        const services = (await new EtcdHighAvailabilityServicesFactory().createHAServices(
          configuration,
          { onWarning: (message) => warnings.push(message) },
        )) as EtcdHighAvailabilityServices;
        open.add(services);
        return services;
      },
    };
    body(fixture);
  });
}
