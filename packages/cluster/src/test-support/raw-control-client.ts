/**
 * A hand-driven task manager for tests of the job manager's control plane: it sends raw frames,
 * reads raw replies, and answers nothing by itself.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import WebSocket from "ws";
import {
  CONTROL_PLANE_PATH,
  CONTROL_PLANE_VERSION,
  SLUICE_VERSION,
} from "../control-plane-messages.js";
import type { ShufflePluginIdentity } from "../shuffle-plugin-identity.js";

const opened: WebSocket[] = [];

/** Drops every connection a test opened (for an `afterEach`). */
export function terminateRawClients(): void {
  for (const socket of opened.splice(0)) socket.terminate();
}

/** A JSON-RPC message as received. */
export type RawMessage = Record<string, unknown>;

export class RawControlClient {
  private readonly inbox: RawMessage[] = [];
  private waiter: (() => void) | undefined;
  closed = false;

  constructor(readonly socket: WebSocket) {
    socket.on("message", (data) => {
      this.inbox.push(JSON.parse(data.toString()) as RawMessage);
      this.waiter?.();
    });
    socket.on("close", () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  static async open(url: string, options: WebSocket.ClientOptions = {}): Promise<RawControlClient> {
    const socket = new WebSocket(`${url}${CONTROL_PLANE_PATH}`, options);
    opened.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    return new RawControlClient(socket);
  }

  send(payload: unknown): void {
    this.socket.send(typeof payload === "string" ? payload : JSON.stringify(payload));
  }

  /** The next message that is not a heartbeat request (those are left unanswered). */
  async next(): Promise<RawMessage> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const message = this.inbox.shift();
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

  async request(id: number, method: string, params: unknown): Promise<RawMessage> {
    this.send({ jsonrpc: "2.0", id, method, params });
    const reply = await this.next();
    expect(reply.id).toBe(id);
    return reply;
  }

  hello(
    id = 1,
    overrides: { version?: number; applicationVersion?: string } = {},
  ): Promise<RawMessage> {
    return this.request(id, "hello", {
      version: overrides.version ?? CONTROL_PLANE_VERSION,
      sluiceVersion: SLUICE_VERSION,
      applicationVersion: overrides.applicationVersion ?? "",
      pid: 4242,
      hostname: "worker-7",
    });
  }

  /**
   * Registers a TaskExecutor; its resource id is a fresh one unless given (the job manager refuses
   * a second task manager with the same id).
   */
  register(
    id: number,
    plugin: ShufflePluginIdentity,
    resourceId: string = randomBytes(16).toString("hex"),
  ): Promise<RawMessage> {
    return this.request(id, "registerTaskExecutor", {
      resourceId,
      host: "10.9.8.7",
      dataPort: 40000,
      plugin,
      numberOfSlots: 1,
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

/** The error of a JSON-RPC error reply. */
export function errorOf(reply: RawMessage): {
  code: number;
  message: string;
  data?: { code?: string; name?: string };
} {
  expect(reply.error, JSON.stringify(reply)).toBeDefined();
  return reply.error as { code: number; message: string; data?: { code?: string } };
}

/** Polls `condition` every 20 ms until it holds; fails after `timeoutMs`. */
export async function until(
  condition: () => boolean,
  what: string,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
