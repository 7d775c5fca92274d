import { createTestPki, type TestPki } from "@sluice/core/test-certificates";
import { readTlsSettings, type TlsSettings } from "@sluice/network/plugin";
import { Configuration } from "@sluice/runtime";
import { closedAfterBlockedTlsHandshake } from "@sluice/shuffle-tck/transport";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { connectToJobManager } from "./connect-to-job-manager.js";
import { CONTROL_PLANE_VERSION, SLUICE_VERSION } from "./control-plane-messages.js";
import { readControlPlaneTls } from "./control-plane-tls.js";
import type { JobManager, JobManagerStartOptions } from "./job-manager.js";
import type { RegisteredTaskManager } from "./registered-task-manager.js";
import {
  errorOf,
  RawControlClient,
  terminateRawClients,
  until,
} from "./test-support/raw-control-client.js";
import { closeTestCluster, startJobManager } from "./test-support/test-cluster.js";

interface Recorded {
  readonly jobManager: JobManager;
  readonly registered: RegisteredTaskManager[];
  readonly lost: { taskManager: RegisteredTaskManager; cause: Error }[];
  readonly warnings: string[];
}

afterEach(async () => {
  terminateRawClients();
  await closeTestCluster();
});

async function start(
  overrides: Readonly<Record<string, unknown>> = {},
  options: JobManagerStartOptions = {},
): Promise<Recorded> {
  const registered: RegisteredTaskManager[] = [];
  const lost: Recorded["lost"] = [];
  const warnings: string[] = [];
  const jobManager = await startJobManager(
    { "heartbeat.timeout": "400ms", "taskmanager.memory.segment-size": "16kb", ...overrides },
    {
      applicationVersion: "9.9.9",
      onTaskManagerRegistered: (taskManager) => registered.push(taskManager),
      onTaskManagerLost: (taskManager, cause) => lost.push({ taskManager, cause }),
      onWarning: (message) => warnings.push(message),
      ...options,
    },
  );
  return { jobManager, registered, lost, warnings };
}

describe("the job manager's control plane", () => {
  it("answers malformed messages with an error reply naming the problem and keeps serving the connection", async () => {
    const { jobManager, warnings } = await start();
    const client = await RawControlClient.open(jobManager.url);

    client.send("garbage{");
    const notJson = errorOf(await client.next());
    expect(notJson.code).toBe(-32700);
    expect(notJson.message).toContain("not JSON");
    expect(notJson.data?.code).toBe("SLUICE_ERR_PROTOCOL");

    client.send("null");
    expect(errorOf(await client.next()).message).toContain("not a JSON-RPC message");

    client.socket.send(Buffer.from([1, 2, 3]));
    expect(errorOf(await client.next()).message).toContain("binary frames");

    const badParams = errorOf(await client.request(7, "hello", { version: "one" }));
    expect(badParams.code).toBe(-32602);
    expect(badParams.message).toContain("hello");
    expect(badParams.message).toContain("version");
    expect(badParams.message).toContain("pid");

    expect(errorOf(await client.request(8, "deployEverything", {})).code).toBe(-32601);
    expect(
      errorOf(await client.request(9, "application", { name: "progress", payload: 1 })).message,
    ).toContain("has not registered");

    const hello = await client.hello(10, { applicationVersion: "9.9.9" });
    expect(hello.result).toMatchObject({
      configuration: { "taskmanager.memory.segment-size": "16kb" },
    });
    expect(warnings.length).toBeGreaterThanOrEqual(4);
  });

  it("reports notifications it cannot deliver: of an unknown method, or with malformed params", async () => {
    const { jobManager, warnings } = await start();
    const client = await RawControlClient.open(jobManager.url);
    client.send({ jsonrpc: "2.0", method: "gossip", params: {} });
    client.send({ jsonrpc: "2.0", method: "application", params: { name: 5 } });
    await until(() => warnings.length >= 2, "both notifications to be reported");
    expect(warnings[0]).toContain("notification of unknown method gossip");
    expect(warnings[1]).toContain("application from");
    expect(warnings[1]).toContain("malformed params");
  });

  it("does not ship the keys that describe its own host to task managers", async () => {
    const { jobManager } = await start({
      "taskmanager.host": "192.0.2.1",
      "taskmanager.data.port": 31000,
    });
    const client = await RawControlClient.open(jobManager.url);
    const { configuration } = (await client.hello(1, { applicationVersion: "9.9.9" })).result as {
      configuration: Record<string, unknown>;
    };
    expect(configuration["shuffle-service-factory.class"]).toBe("tcp");
    expect(configuration).not.toHaveProperty("taskmanager.host");
    expect(configuration).not.toHaveProperty("taskmanager.data.port");
  });

  it("refuses a task manager of another control-plane version, naming both versions, and closes the connection", async () => {
    const { jobManager, registered } = await start();
    const client = await RawControlClient.open(jobManager.url);
    const refused = errorOf(
      await client.hello(1, { version: CONTROL_PLANE_VERSION + 1, applicationVersion: "9.9.9" }),
    );
    expect(refused.data?.code).toBe("SLUICE_ERR_PROTOCOL");
    expect(refused.message).toContain(`control plane version ${CONTROL_PLANE_VERSION + 1}`);
    expect(refused.message).toContain(`the job manager version ${CONTROL_PLANE_VERSION}`);
    await until(() => client.closed, "the connection to close");
    expect(registered).toEqual([]);
  });

  it("refuses a task manager of another application version, naming both", async () => {
    const { jobManager } = await start();
    const client = await RawControlClient.open(jobManager.url);
    const refused = errorOf(await client.hello(1, { applicationVersion: "1.0.0" }));
    expect(refused.data?.code).toBe("SLUICE_ERR_PROTOCOL");
    expect(refused.message).toContain(`(Sluice ${SLUICE_VERSION}, application 1.0.0)`);
    expect(refused.message).toContain(`(Sluice ${SLUICE_VERSION}, application 9.9.9)`);
    await until(() => client.closed, "the connection to close");
  });

  it("refuses a task executor that loaded another shuffle plugin, naming both plugins", async () => {
    const { jobManager, registered } = await start();
    const client = await RawControlClient.open(jobManager.url);
    expect((await client.hello(1, { applicationVersion: "9.9.9" })).result).toBeDefined();
    const other = { reference: "@sluice/shuffle-ws#WsShuffleServiceFactory", package: "q@2" };
    const refused = errorOf(await client.register(2, other));
    expect(refused.data?.code).toBe("SLUICE_ERR_CONFIG");
    expect(refused.message).toContain("@sluice/shuffle-ws#WsShuffleServiceFactory (q@2)");
    expect(refused.message).toContain(
      `@sluice/shuffle-tcp#TcpShuffleServiceFactory (${jobManager.plugin.package})`,
    );
    await until(() => client.closed, "the connection to close");
    expect(registered).toEqual([]);
  });

  it("refuses task managers beyond maxTaskManagers, and accepts a replacement for a lost one", async () => {
    const { jobManager, registered, lost } = await start({}, { maxTaskManagers: 1 });
    const [first, second] = await Promise.all([
      RawControlClient.open(jobManager.url),
      RawControlClient.open(jobManager.url),
    ]);
    for (const client of [first, second]) await client?.hello(1, { applicationVersion: "9.9.9" });
    expect((await first?.register(2, jobManager.plugin))?.result).toEqual({ index: 0 });
    const refused = errorOf((await second?.register(2, jobManager.plugin)) ?? {});
    expect(refused.message).toContain("already has the 1 task managers it accepts");
    expect(registered).toHaveLength(1);

    first?.socket.terminate();
    await until(() => lost.length === 1, "the first task manager to be lost");
    const replacement = await RawControlClient.open(jobManager.url);
    await replacement.hello(1, { applicationVersion: "9.9.9" });
    expect((await replacement.register(2, jobManager.plugin)).result).toEqual({ index: 1 });
  });

  it("registers a task executor under the address it announces and reports it lost at once when its connection closes", async () => {
    const { jobManager, registered, lost } = await start();
    const client = await RawControlClient.open(jobManager.url);
    client.answerHeartbeats();
    await client.hello(1, { applicationVersion: "9.9.9" });
    expect((await client.register(2, jobManager.plugin)).result).toEqual({ index: 0 });
    expect(registered.map((tm) => tm.location.host)).toEqual(["10.9.8.7"]);
    expect(jobManager.taskManagers[0]?.connected).toBe(true);
    client.socket.close();
    await until(() => lost.length === 1, "the loss to be reported");
    const { cause } = lost[0] as { cause: Error };
    expect(cause.message).toMatch(/^task manager 0 \(pid 4242\) at 10\.9\.8\.7 was lost/);
    expect((cause as { code?: string }).code).toBe("SLUICE_ERR_REMOTE_TRANSPORT");
    expect(jobManager.taskManagers[0]?.connected).toBe(false);
  });

  it("reports a task manager lost when it stops answering heartbeats, naming it, its address and heartbeat.timeout", async () => {
    const { jobManager, lost } = await start();
    const silent = await RawControlClient.open(jobManager.url);
    await silent.hello(1, { applicationVersion: "9.9.9" });
    await silent.register(2, jobManager.plugin);
    await until(() => lost.length === 1, "the heartbeat timeout");
    const { cause } = lost[0] as { cause: Error };
    expect((cause as { code?: string }).code).toBe("SLUICE_ERR_TIMEOUT");
    expect(cause.message).toContain("task manager 0 (pid 4242) at 10.9.8.7 was lost");
    expect(cause.message).toContain("heartbeat.timeout 400 ms");
    await until(() => silent.closed, "the silent task manager to be disconnected");
  });

  it("keeps a task manager that answers its heartbeats", async () => {
    const { jobManager, lost, registered } = await start();
    const client = await RawControlClient.open(jobManager.url);
    client.answerHeartbeats();
    await client.hello(1, { applicationVersion: "9.9.9" });
    await client.register(2, jobManager.plugin);
    // Four heartbeat timeouts pass; the answered heartbeats keep restarting the monitor.
    const started = Date.now();
    await until(() => Date.now() - started > 1_600, "four timeouts to pass", 3_000);
    expect(lost).toEqual([]);
    expect(registered).toHaveLength(1);
  });

  it("resolves waitForTaskManagers once enough register, and rejects it when it times out or closes", async () => {
    const { jobManager } = await start();
    const waiting = jobManager.waitForTaskManagers(1);
    const client = await RawControlClient.open(jobManager.url);
    client.answerHeartbeats();
    await client.hello(1, { applicationVersion: "9.9.9" });
    await client.register(2, jobManager.plugin);
    expect((await waiting).map((tm) => tm.index)).toEqual([0]);
    await expect(jobManager.waitForTaskManagers(2, 50)).rejects.toMatchObject({
      code: "SLUICE_ERR_TIMEOUT",
      message: expect.stringContaining("1 of 2 task managers registered"),
    });
    const never = expect(jobManager.waitForTaskManagers(3)).rejects.toMatchObject({
      code: "SLUICE_ERR_ILLEGAL_STATE",
    });
    await jobManager.close({ timeoutMs: 100 });
    await never;
  });
});

describe("the control plane with internal TLS", () => {
  let pki: TestPki | undefined;
  let foreign: TestPki | undefined;
  afterAll(() => {
    pki?.remove();
    foreign?.remove();
  });

  function tlsKeys(ca: string, identity: { key: string; cert: string }): Record<string, unknown> {
    return {
      "security.ssl.internal.enabled": true,
      "taskmanager.data.ssl.enabled": false,
      "security.ssl.internal.ca": ca,
      "security.ssl.internal.key": identity.key,
      "security.ssl.internal.cert": identity.cert,
    };
  }

  function connect(port: number, keys: Record<string, unknown>) {
    return connectToJobManager({
      host: "127.0.0.1",
      port,
      tls: readControlPlaneTls(new Configuration(keys)),
      maxMessageSize: 1024 * 1024,
      requestTimeoutMs: 2_000,
      retryForMs: 0,
      onProtocolError: () => {},
    });
  }

  it("authenticates both sides with the data plane's certificates and refuses an untrusted client at the handshake", async () => {
    pki = createTestPki("control-plane");
    foreign = createTestPki("control-plane-foreign");
    const trusted = tlsKeys(pki.caCert, pki.issue("taskmanager"));
    // Trusts the job manager's CA, but its own certificate was signed by another CA.
    const untrusted = tlsKeys(pki.caCert, foreign.issue("intruder"));
    // taskmanager.data.ssl.enabled only switches the data port: the control plane is still TLS.
    expect(readTlsSettings(new Configuration(trusted))).toBeUndefined();
    const { jobManager, registered, warnings } = await start(
      tlsKeys(pki.caCert, pki.issue("jobmanager")),
    );
    expect(jobManager.url).toMatch(/^wss:/);

    await expect(connect(jobManager.port, untrusted)).rejects.toMatchObject({
      code: "SLUICE_ERR_PARTITION_CONNECTION",
    });
    await expect(
      RawControlClient.open(`ws://127.0.0.1:${jobManager.port}`),
      "a plaintext client",
    ).rejects.toThrow();
    await until(() => warnings.length >= 2, "both refusals to be reported");
    expect(warnings.every((w) => w.includes("TLS handshake failed"))).toBe(true);
    expect(registered).toEqual([]);

    const { connection } = await connect(jobManager.port, trusted);
    const hello = await connection.call("hello", {
      version: CONTROL_PLANE_VERSION,
      sluiceVersion: SLUICE_VERSION,
      applicationVersion: "9.9.9",
      pid: 1,
      hostname: "trusted",
    });
    expect(hello.configuration).toBeDefined();
    connection.close();
  });

  it("keeps a client whose TLS handshake was completed while the event loop was blocked past security.ssl.internal.handshake-timeout", async () => {
    pki ??= createTestPki("control-plane");
    const deadlineMs = 300;
    const { jobManager, warnings } = await start({
      ...tlsKeys(pki.caCert, pki.issue("jobmanager")),
      "security.ssl.internal.handshake-timeout": `${deadlineMs}ms`,
    });
    const settings = readControlPlaneTls(
      new Configuration(tlsKeys(pki.caCert, pki.issue("stalled"))),
    ) as TlsSettings;
    expect(await closedAfterBlockedTlsHandshake(jobManager.port, settings, deadlineMs)).toBe(false);
    expect(warnings).toEqual([]);
  });

  it("a task manager refuses a job manager whose certificate its CA did not sign", async () => {
    pki ??= createTestPki("control-plane");
    foreign ??= createTestPki("control-plane-foreign");
    const { jobManager, warnings } = await start(
      tlsKeys(foreign.caCert, foreign.issue("impostor")),
    );
    await expect(
      connect(jobManager.port, tlsKeys(pki.caCert, pki.issue("honest"))),
    ).rejects.toThrow(/cannot reach the job manager at wss:\/\/127\.0\.0\.1/);
    await until(() => warnings.length >= 1, "the job manager to see the failed handshake");
  });
});
