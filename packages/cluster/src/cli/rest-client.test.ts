import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { expectRejection, waitFor } from "@sluice/core/testing";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "@sluice/ha-etcd/testing";
import { Configuration, IllegalStateError } from "@sluice/runtime";
import type { HighAvailabilityServices } from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { publishLeader } from "../test-support/published-leader.js";
import { RestClusterClient } from "./rest-client.js";

const reason = etcdUnavailableReason();
if (reason !== undefined) console.warn(`skipping the REST client's leader tests: ${reason}`);

describe.skipIf(reason !== undefined)("a REST client that follows the leader", () => {
  let etcd: EtcdServer | undefined;
  let storageDir = "";
  let run = 0;
  const servers: Server[] = [];
  const services: HighAvailabilityServices[] = [];
  const clients: RestClusterClient[] = [];
  beforeAll(async () => {
    etcd = await startEtcd();
    storageDir = mkdtempSync(path.join(tmpdir(), "sluice-rest-client-"));
  }, 30_000);
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(services.splice(0).map((opened) => opened.close()));
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      server.close();
    }
    run++;
  });
  afterAll(async () => {
    await etcd?.stop();
    if (storageDir !== "") rmSync(storageDir, { recursive: true, force: true });
  });
  const configuration = () =>
    new Configuration({
      "high-availability.type": "etcd",
      "high-availability.etcd.endpoints": (etcd as EtcdServer).endpoint,
      "high-availability.storageDir": storageDir,
      "high-availability.cluster-id": `rest-client-${process.pid}-${run}`,
      "high-availability.etcd.lease-ttl": "2s",
    });

  /** A REST endpoint on a free loopback port that answers every request with `answer`. */
  const endpoint = async (answer: (response: ServerResponse) => void): Promise<string> => {
    const server = createServer((_, response) => answer(response));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  /** A job manager's services that, once elected, publish `restAddress` as its REST endpoint. */
  const candidate = async (restAddress: string) => {
    const opened = await publishLeader(configuration(), { restAddress });
    services.push(opened);
    return opened;
  };

  it("sends each request to the REST endpoint the latest leader published, and drops a request in flight to the one it left at once", async () => {
    // The first leader's endpoint takes requests and never answers (a paused process).
    const silent = await endpoint(() => {});
    const answering = await endpoint((response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end('{"at":"the second leader"}');
    });
    const first = await candidate(silent);
    const client = await RestClusterClient.of(configuration(), undefined);
    clients.push(client);
    expect(client.url).toBe(silent);
    await candidate(answering);

    const inFlight = client.get("/jobs/overview");
    // The first leader resigns: the second one leads and publishes its endpoint.
    await first.close();
    await expectRejection(
      inFlight,
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      `GET ${silent}/jobs/overview was dropped: the leading job manager changed, its REST endpoint is ${answering} now`,
    );
    expect(client.url).toBe(answering);
    await expect(client.get("/jobs/overview")).resolves.toEqual({ at: "the second leader" });
  }, 30_000);

  it("stops following the leader once closed, and keeps the endpoint it followed last", async () => {
    const answer = (at: string) => (response: ServerResponse) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ at }));
    };
    const firstEndpoint = await endpoint(answer("first"));
    const secondEndpoint = await endpoint(answer("second"));
    const first = await candidate(firstEndpoint);
    const client = await RestClusterClient.of(configuration(), undefined);
    await client.close();
    await client.close();
    await candidate(secondEndpoint);
    await first.close();
    // Another client sees the second leader: the closed one does not follow it.
    const fresh = await RestClusterClient.of(configuration(), undefined);
    clients.push(fresh);
    await waitFor(() => fresh.url === secondEndpoint, { what: "the second leader's endpoint" });
    expect(client.url).toBe(firstEndpoint);
    await expect(client.get("/overview")).resolves.toEqual({ at: "first" });
  }, 30_000);
});
