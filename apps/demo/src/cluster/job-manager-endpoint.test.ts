import { readTlsSettings } from "@sluice/network";
import { Configuration } from "@sluice/runtime";
import { createTestPki, type TestPki } from "@sluice/shuffle-tck/transport";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { connectToJobManager } from "./connect-to-job-manager.js";
import { CONTROL_PLANE_PATH, CONTROL_PLANE_VERSION } from "./control-plane-messages.js";
import { readControlPlaneTls } from "./control-plane-tls.js";
import { JobManagerEndpoint, type JobManagerEndpointOptions } from "./job-manager-endpoint.js";
import type { RegisteredTaskManager } from "./registered-task-manager.js";

const PLUGIN = { reference: "@sluice/shuffle-tcp#TcpShuffleServiceFactory", package: "p@1" };
const APP_VERSION = "9.9.9";

interface Recorded {
  readonly endpoint: JobManagerEndpoint;
  readonly registered: RegisteredTaskManager[];
  readonly lost: { taskManager: RegisteredTaskManager; cause: Error }[];
  readonly warnings: string[];
}

const endpoints: JobManagerEndpoint[] = [];
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const endpoint of endpoints.splice(0)) await endpoint.close();
});

async function startEndpoint(
  overrides: Partial<JobManagerEndpointOptions> = {},
): Promise<Recorded> {
  const registered: RegisteredTaskManager[] = [];
  const lost: Recorded["lost"] = [];
  const warnings: string[] = [];
  const endpoint = await JobManagerEndpoint.listen({
    host: "127.0.0.1",
    port: 0,
    tls: undefined,
    maxMessageSize: 1024 * 1024,
    heartbeatIntervalMs: 50,
    heartbeatTimeoutMs: 400,
    appVersion: APP_VERSION,
    plugin: PLUGIN,
    expectedTaskManagers: 2,
    taskManagerConfiguration: { "taskmanager.memory.segment-size": "16kb" },
    events: {
      onRegistered: (taskManager) => registered.push(taskManager),
      onLost: (taskManager, cause) => lost.push({ taskManager, cause }),
      onProgress: () => {},
      onFinalProgress: () => {},
      onWarning: (message) => warnings.push(message),
    },
    ...overrides,
  });
  endpoints.push(endpoint);
  return { endpoint, registered, lost, warnings };
}

/** A hand-driven task manager: sends raw frames, reads raw replies, answers nothing by itself. */
class RawClient {
  private readonly inbox: unknown[] = [];
  private waiter: (() => void) | undefined;
  closed = false;

  constructor(readonly socket: WebSocket) {
    socket.on("message", (data) => {
      this.inbox.push(JSON.parse(data.toString()));
      this.waiter?.();
    });
    socket.on("close", () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  static async open(url: string, options: WebSocket.ClientOptions = {}): Promise<RawClient> {
    const socket = new WebSocket(`${url}${CONTROL_PLANE_PATH}`, options);
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    return new RawClient(socket);
  }

  send(payload: unknown): void {
    this.socket.send(typeof payload === "string" ? payload : JSON.stringify(payload));
  }

  /** The next message that is not a heartbeat request (those are left unanswered). */
  async next(): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const message = this.inbox.shift() as Record<string, unknown> | undefined;
      if (message !== undefined && message.method !== "heartbeat") return message;
      if (message !== undefined) continue;
      if (this.closed) throw new Error("the connection closed");
      if (Date.now() > deadline) throw new Error("no message within 5 s");
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        setTimeout(resolve, 100);
      });
    }
  }

  async request(id: number, method: string, params: unknown): Promise<Record<string, unknown>> {
    this.send({ jsonrpc: "2.0", id, method, params });
    const reply = await this.next();
    expect(reply.id).toBe(id);
    return reply;
  }

  hello(id = 1, version = CONTROL_PLANE_VERSION): Promise<Record<string, unknown>> {
    return this.request(id, "hello", {
      version,
      appVersion: APP_VERSION,
      pid: 4242,
      hostname: "worker-7",
    });
  }

  register(id = 2, plugin = PLUGIN): Promise<Record<string, unknown>> {
    return this.request(id, "registerTaskExecutor", {
      resourceId: "0123456789abcdef0123456789abcdef",
      host: "10.9.8.7",
      dataPort: 40000,
      plugin,
    });
  }

  /** Answers every heartbeat request from now on. */
  answerHeartbeats(): void {
    this.socket.on("message", (data) => {
      const message = JSON.parse(data.toString()) as { id?: unknown; method?: unknown };
      if (message.method === "heartbeat") {
        this.send({ jsonrpc: "2.0", id: message.id, result: {} });
      }
    });
  }
}

function errorOf(reply: Record<string, unknown>): {
  code: number;
  message: string;
  data?: { code?: string; name?: string };
} {
  expect(reply.error, JSON.stringify(reply)).toBeDefined();
  return reply.error as { code: number; message: string; data?: { code?: string } };
}

async function until(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("the job manager's control plane", () => {
  it("answers malformed messages with an error reply naming the problem and keeps serving the connection", async () => {
    const { endpoint, warnings } = await startEndpoint();
    const client = await RawClient.open(endpoint.url);

    client.send("garbage{");
    const notJson = errorOf(await client.next());
    expect(notJson.code).toBe(-32700);
    expect(notJson.message).toContain("not JSON");
    expect(notJson.data?.code).toBe("SLUICE_ERR_PROTOCOL");

    client.send("null");
    expect(errorOf(await client.next()).message).toContain("not a JSON-RPC message");

    client.socket.send(Buffer.from([1, 2, 3]));
    expect(errorOf(await client.next()).message).toContain("binary frames");

    const badParams = errorOf(
      await client.request(7, "hello", { version: "one", appVersion: APP_VERSION }),
    );
    expect(badParams.code).toBe(-32602);
    expect(badParams.message).toContain("hello");
    expect(badParams.message).toContain("version");
    expect(badParams.message).toContain("pid");

    expect(errorOf(await client.request(8, "deployEverything", {})).code).toBe(-32601);
    expect(
      errorOf(await client.request(9, "reportProgress", { tasks: [], rssMb: 1 })).message,
    ).toContain("has not registered");

    const hello = await client.hello(10);
    expect(hello.result).toEqual({
      configuration: { "taskmanager.memory.segment-size": "16kb" },
    });
    expect(warnings.length).toBeGreaterThanOrEqual(4);
  });

  it("refuses a task manager of another control-plane version, naming both versions, and closes the connection", async () => {
    const { endpoint, registered } = await startEndpoint();
    const client = await RawClient.open(endpoint.url);
    const refused = errorOf(await client.hello(1, CONTROL_PLANE_VERSION + 1));
    expect(refused.data?.code).toBe("SLUICE_ERR_PROTOCOL");
    expect(refused.message).toContain(`control plane version ${CONTROL_PLANE_VERSION + 1}`);
    expect(refused.message).toContain(`the job manager version ${CONTROL_PLANE_VERSION}`);
    await until(() => client.closed, "the connection to close");
    expect(registered).toEqual([]);
  });

  it("refuses a task executor that loaded another shuffle plugin, naming both plugins", async () => {
    const { endpoint, registered } = await startEndpoint();
    const client = await RawClient.open(endpoint.url);
    expect((await client.hello()).result).toBeDefined();
    const other = { reference: "@sluice/shuffle-ws#WsShuffleServiceFactory", package: "q@2" };
    const refused = errorOf(await client.register(2, other));
    expect(refused.data?.code).toBe("SLUICE_ERR_CONFIG");
    expect(refused.message).toContain("@sluice/shuffle-ws#WsShuffleServiceFactory (q@2)");
    expect(refused.message).toContain(`${PLUGIN.reference} (${PLUGIN.package})`);
    await until(() => client.closed, "the connection to close");
    expect(registered).toEqual([]);
  });

  it("registers a task executor under the address it announces and reports it lost at once when its connection closes", async () => {
    const { endpoint, registered, lost } = await startEndpoint();
    const client = await RawClient.open(endpoint.url);
    client.answerHeartbeats();
    await client.hello();
    expect((await client.register()).result).toEqual({ index: 0 });
    expect(registered.map((tm) => tm.location.host)).toEqual(["10.9.8.7"]);
    client.socket.close();
    await until(() => lost.length === 1, "the loss to be reported");
    const { cause } = lost[0] as { cause: Error };
    expect(cause.message).toMatch(/^task manager 0 \(pid 4242\) at 10\.9\.8\.7 was lost/);
    expect((cause as { code?: string }).code).toBe("SLUICE_ERR_REMOTE_TRANSPORT");
  });

  it("reports a task manager lost when it stops answering heartbeats, naming it, its address and heartbeat.timeout", async () => {
    const { endpoint, lost } = await startEndpoint();
    const silent = await RawClient.open(endpoint.url);
    await silent.hello();
    await silent.register();
    await until(() => lost.length === 1, "the heartbeat timeout");
    const { cause } = lost[0] as { cause: Error };
    expect((cause as { code?: string }).code).toBe("SLUICE_ERR_TIMEOUT");
    expect(cause.message).toContain("task manager 0 (pid 4242) at 10.9.8.7 was lost");
    expect(cause.message).toContain("heartbeat.timeout 400 ms");
    await until(() => silent.closed, "the silent task manager to be disconnected");
  });

  it("keeps a task manager that answers its heartbeats", async () => {
    const { endpoint, lost, registered } = await startEndpoint();
    const client = await RawClient.open(endpoint.url);
    client.answerHeartbeats();
    await client.hello();
    await client.register();
    // Four heartbeat timeouts pass; the answered heartbeats keep restarting the monitor.
    const started = Date.now();
    await until(() => Date.now() - started > 1_600, "four timeouts to pass", 3_000);
    expect(lost).toEqual([]);
    expect(registered).toHaveLength(1);
  });
});

describe("the control plane with internal TLS", () => {
  let pki: TestPki | undefined;
  let foreign: TestPki | undefined;
  afterAll(() => {
    pki?.remove();
    foreign?.remove();
  });

  function tlsConfig(ca: string, identity: { key: string; cert: string }): Configuration {
    return new Configuration({
      "security.ssl.internal.enabled": true,
      "taskmanager.data.ssl.enabled": false,
      "security.ssl.internal.ca": ca,
      "security.ssl.internal.key": identity.key,
      "security.ssl.internal.cert": identity.cert,
    });
  }

  it("authenticates both sides with the data plane's certificates and refuses an untrusted client at the handshake", async () => {
    pki = createTestPki("control-plane");
    foreign = createTestPki("control-plane-foreign");
    const jobManagerIdentity = pki.issue("jobmanager");
    const trusted = tlsConfig(pki.caCert, pki.issue("taskmanager"));
    // Trusts the job manager's CA, but its own certificate was signed by another CA.
    const untrusted = tlsConfig(pki.caCert, foreign.issue("intruder"));
    // taskmanager.data.ssl.enabled only switches the data port: the control plane is still TLS.
    expect(readTlsSettings(trusted)).toBeUndefined();
    const { endpoint, registered, warnings } = await startEndpoint({
      tls: readControlPlaneTls(tlsConfig(pki.caCert, jobManagerIdentity)),
    });
    expect(endpoint.url).toMatch(/^wss:/);
    const connect = (config: Configuration) =>
      connectToJobManager({
        host: "127.0.0.1",
        port: endpoint.port,
        tls: readControlPlaneTls(config),
        maxMessageSize: 1024 * 1024,
        requestTimeoutMs: 2_000,
        retryForMs: 0,
        onProtocolError: () => {},
      });

    await expect(connect(untrusted)).rejects.toMatchObject({
      code: "SLUICE_ERR_PARTITION_CONNECTION",
    });
    await expect(
      RawClient.open(`ws://127.0.0.1:${endpoint.port}`),
      "a plaintext client",
    ).rejects.toThrow();
    await until(() => warnings.length >= 2, "both refusals to be reported");
    expect(warnings.every((w) => w.includes("TLS handshake failed"))).toBe(true);
    expect(registered).toEqual([]);

    const { connection } = await connect(trusted);
    const hello = await connection.call("hello", {
      version: CONTROL_PLANE_VERSION,
      appVersion: APP_VERSION,
      pid: 1,
      hostname: "trusted",
    });
    expect(hello.configuration).toBeDefined();
    connection.close();
  });

  it("a task manager refuses a job manager whose certificate its CA did not sign", async () => {
    pki ??= createTestPki("control-plane");
    foreign ??= createTestPki("control-plane-foreign");
    const { endpoint, warnings } = await startEndpoint({
      tls: readControlPlaneTls(tlsConfig(foreign.caCert, foreign.issue("impostor"))),
    });
    const attempt = connectToJobManager({
      host: "127.0.0.1",
      port: endpoint.port,
      tls: readControlPlaneTls(tlsConfig(pki.caCert, pki.issue("honest"))),
      maxMessageSize: 1024 * 1024,
      requestTimeoutMs: 2_000,
      retryForMs: 0,
      onProtocolError: () => {},
    });
    await expect(attempt).rejects.toThrow(/cannot reach the job manager at wss:\/\/127\.0\.0\.1/);
    await until(() => warnings.length >= 1, "the job manager to see the failed handshake");
  });
});
