import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createTestPki, type TestCertificate, type TestPki } from "@sluice/core/test-certificates";
import { waitFor } from "@sluice/core/testing";
import {
  type LeaderContender,
  type LeaderInformation,
  readableConfigOf,
} from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe } from "vitest";
import { EtcdClient } from "../client/etcd-client.js";
import { EtcdKv } from "../client/etcd-kv.js";
import type { EtcdHighAvailabilityServices } from "../etcd-high-availability-services.js";
import { EtcdHighAvailabilityServicesFactory } from "../etcd-high-availability-services-factory.js";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "../testing/index.js";
import {
  dropEtcdAuthTokens,
  type EtcdUsers,
  enableEtcdAuthentication,
} from "./etcd-authentication.js";

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

/** A contender that confirms `address` as soon as `services` elect it. */
export function confirmingContender(
  services: EtcdHighAvailabilityServices,
  address: string,
): RecordingContender {
  const contender: RecordingContender = new RecordingContender(() => {
    if (contender.token !== undefined) {
      void services
        .getJobManagerLeaderElection()
        .confirmLeadership(contender.token, address)
        .catch(() => undefined);
    }
  });
  return contender;
}

/**
 * Starts `services`' job manager leader retrieval, recording every leader it is told of (`seen`)
 * and every error (`errors`); stop `retriever` at the end.
 */
export async function recordingRetrieval(services: EtcdHighAvailabilityServices) {
  const seen: (LeaderInformation | undefined)[] = [];
  const errors: Error[] = [];
  const retriever = services.getJobManagerLeaderRetriever();
  await retriever.start({
    notifyLeaderAddress: (leader) => seen.push(leader),
    handleError: (error) => errors.push(error),
  });
  return { seen, errors, retriever };
}

/**
 * Two job managers' services on `fixture`'s etcd, `first` elected (its contender `a` confirms
 * `ws://a:1`) and `second` standing by (`b`, `ws://b:2`), and a third services' leader retrieval
 * that records every leader it is told of (`seen`) and every error (`errors`); stop `retriever`
 * at the end.
 */
export async function leaderStandbyAndObserver(
  fixture: EtcdFixture,
  overrides?: Readonly<Record<string, string | undefined>>,
) {
  const first = await fixture.services(overrides);
  const second = await fixture.services(overrides);
  const { seen, errors, retriever } = await recordingRetrieval(await fixture.services(overrides));
  const a = confirmingContender(first, "ws://a:1");
  const b = confirmingContender(second, "ws://b:2");
  await first.getJobManagerLeaderElection().startLeaderElection(a);
  await waitFor(() => seen.at(-1)?.address === "ws://a:1", {
    what: "the first leader's address",
    timeoutMs: 15_000,
  });
  await second.getJobManagerLeaderElection().startLeaderElection(b);
  return { first, second, a, b, seen, errors, retriever };
}

/** How the etcd of {@link describeWithEtcd} is secured. */
export interface EtcdFixtureOptions {
  /**
   * Serve etcd over TLS and require client certificates, from a throw-away authority made for
   * the file: the services get `high-availability.etcd.ssl.*`.
   */
  readonly tls?: boolean;
  /**
   * Turn on etcd's authentication, with a user whose role grants the keys of the file's
   * clusters only: the services get `high-availability.etcd.username` and `.password`.
   */
  readonly auth?: boolean;
}

/** A real etcd for the tests of one file, and services on it that are closed after each test. */
export interface EtcdFixture {
  readonly etcd: () => EtcdServer;
  /** A folder for `high-availability.storageDir`, removed after the file's tests. */
  readonly storageDir: () => string;
  /**
   * The configuration of {@link EtcdFixture.services}: the endpoint, the storage folder, the
   * test's cluster id, a 2 s lease, the TLS and user keys of a secured etcd, then `overrides`
   * (`undefined` removes a key).
   */
  settings(overrides?: Readonly<Record<string, string | undefined>>): Record<string, string>;
  /** New services on the fixture's etcd (one per simulated job manager). */
  services(
    overrides?: Readonly<Record<string, string | undefined>>,
  ): Promise<EtcdHighAvailabilityServices>;
  /** Warnings the services reported. */
  readonly warnings: string[];
  /** The current test's `high-availability.cluster-id`. */
  clusterId(): string;
  /**
   * etcd's key-value API under `namespace` on a client of its own (an operator's view: what an
   * `etcdctl` would see or change; `root` when authentication is on), closed after the test.
   */
  kv(namespace?: string): EtcdKv;
  /** The users of an etcd with authentication (`auth` option). */
  users(): EtcdUsers;
  /**
   * Makes etcd forget every auth token (`auth` option), as an expiry would: every client must
   * authenticate again.
   */
  dropAuthTokens(): Promise<void>;
}

/**
 * `describe`, against a real etcd the file starts (and stops); skipped with a printed reason when
 * no etcd binary is installed. Every test gets its own `high-availability.cluster-id`.
 */
export function describeWithEtcd(
  name: string,
  body: (fixture: EtcdFixture) => void,
  options: EtcdFixtureOptions = {},
): void {
  const reason = etcdUnavailableReason();
  if (reason !== undefined) {
    console.warn(`skipping "${name}": ${reason}`);
  }
  describe.skipIf(reason !== undefined)(name, () => {
    let server: EtcdServer | undefined;
    let storage: string | undefined;
    /** The authority of a TLS etcd, and the certificate every client of the file presents. */
    let certificates: { readonly pki: TestPki; readonly client: TestCertificate } | undefined;
    const open = new Set<EtcdHighAvailabilityServices>();
    const clients = new Set<EtcdClient>();
    const warnings: string[] = [];
    let cluster = 0;
    const clusterId = () => `test-${process.pid}-${cluster}`;
    const users: EtcdUsers | undefined =
      options.auth === true
        ? {
            rootPassword: "root-secret",
            username: "sluice",
            password: "sluice-secret",
            prefix: `/sluice/test-${process.pid}-`,
          }
        : undefined;
    const client = (user: { username: string; password: string } | undefined) => {
      const created = new EtcdClient({
        endpoints: [(server as EtcdServer).endpoint],
        requestTimeoutMs: 10_000,
        ...(certificates === undefined
          ? {}
          : {
              tls: {
                ca: readFileSync(certificates.pki.caCert),
                cert: readFileSync(certificates.client.cert),
                key: readFileSync(certificates.client.key),
              },
            }),
        ...(user === undefined ? {} : { auth: user }),
      });
      clients.add(created);
      return created;
    };
    const root = () =>
      users === undefined ? undefined : { username: "root", password: users.rootPassword };
    beforeAll(async () => {
      if (options.tls === true) {
        const pki = createTestPki("etcd");
        certificates = { pki, client: pki.issue("job-manager") };
        const etcd = pki.issue("etcd");
        server = await startEtcd({ tls: { cert: etcd.cert, key: etcd.key, ca: pki.caCert } });
      } else {
        server = await startEtcd();
      }
      storage = mkdtempSync(path.join(tmpdir(), "sluice-ha-"));
      if (users !== undefined) {
        await enableEtcdAuthentication(client(undefined), users);
      }
    }, 30_000);
    afterEach(async () => {
      await Promise.all([...open].map((services) => services.close()));
      open.clear();
      for (const created of clients) created.close();
      clients.clear();
      cluster++;
      warnings.length = 0;
    });
    afterAll(async () => {
      for (const created of clients) created.close();
      await server?.stop();
      certificates?.pki.remove();
      if (storage !== undefined) rmSync(storage, { recursive: true, force: true });
    });
    const settings = (overrides: Readonly<Record<string, string | undefined>> = {}) => {
      const entries: Record<string, string | undefined> = {
        "high-availability.type": "etcd",
        "high-availability.etcd.endpoints": (server as EtcdServer).endpoint,
        "high-availability.storageDir": storage as string,
        "high-availability.cluster-id": clusterId(),
        "high-availability.etcd.lease-ttl": "2s",
        ...(certificates === undefined
          ? {}
          : {
              "high-availability.etcd.ssl.ca": certificates.pki.caCert,
              "high-availability.etcd.ssl.cert": certificates.client.cert,
              "high-availability.etcd.ssl.key": certificates.client.key,
            }),
        ...(users === undefined
          ? {}
          : {
              "high-availability.etcd.username": users.username,
              "high-availability.etcd.password": users.password,
            }),
        ...overrides,
      };
      return Object.fromEntries(
        Object.entries(entries).filter(
          (entry): entry is [string, string] => entry[1] !== undefined,
        ),
      );
    };
    const fixture: EtcdFixture = {
      etcd: () => server as EtcdServer,
      storageDir: () => storage as string,
      warnings,
      clusterId,
      settings,
      kv: (namespace = "") => new EtcdKv(client(root()), namespace),
      dropAuthTokens: async () => {
        if (users === undefined) throw new Error("describeWithEtcd without { auth: true }");
        await dropEtcdAuthTokens(() => client(root()));
      },
      users: () => {
        if (users === undefined) throw new Error("describeWithEtcd without { auth: true }");
        return users;
      },
      services: async (overrides = {}) => {
        const services = (await new EtcdHighAvailabilityServicesFactory().createHAServices(
          readableConfigOf(settings(overrides)),
          { onWarning: (message) => warnings.push(message) },
        )) as EtcdHighAvailabilityServices;
        open.add(services);
        return services;
      },
    };
    body(fixture);
  });
}
