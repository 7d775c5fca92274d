import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { TimeoutError } from "@sluice/core";

/** Options of {@link startEtcd}. */
export interface StartEtcdOptions {
  /** How long to wait for the server to answer (default 20 s: a loaded machine is slow). */
  readonly timeoutMs?: number;
}

/** A real etcd server on loopback, with its own data folder. */
export interface EtcdServer {
  /** Its client URL (`http://127.0.0.1:<port>`): the value for `high-availability.etcd.endpoints`. */
  readonly endpoint: string;
  /** The server's process id. */
  readonly pid: number;
  /** Stops the server (SIGKILL) and removes its data folder; idempotent. */
  stop(): Promise<void>;
}

/** The directories searched for `etcd` when `SLUICE_ETCD_BIN` is not set. */
const SEARCH_PATH = ["/usr/bin", "/usr/local/bin", "/usr/sbin"];

/**
 * The etcd binary the tests use: `SLUICE_ETCD_BIN`, else `etcd` on the PATH or in /usr/bin
 * (Debian's `etcd-server` package); `undefined` when there is none.
 */
export function etcdBinary(): string | undefined {
  const configured = process.env.SLUICE_ETCD_BIN;
  if (configured !== undefined && configured !== "") return configured;
  const dirs = [...(process.env.PATH ?? "").split(path.delimiter), ...SEARCH_PATH];
  for (const dir of dirs) {
    if (dir === "") continue;
    const candidate = path.join(dir, "etcd");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Why etcd tests cannot run here (no binary), for the message of a skipped test; `undefined` when
 * they can.
 */
export function etcdUnavailableReason(): string | undefined {
  return etcdBinary() === undefined
    ? "no etcd binary (install Debian's etcd-server, as .ci/run does, or set SLUICE_ETCD_BIN)"
    : undefined;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function healthy(endpoint: string): Promise<boolean> {
  try {
    const response = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
    const body = (await response.json()) as { health?: string };
    return response.ok && body.health === "true";
  } catch {
    return false;
  }
}

/**
 * Starts a single-member etcd on two free loopback ports with a data folder in the temporary
 * directory, and resolves once it answers its health check.
 *
 * @throws Error when no etcd binary is installed; TimeoutError (with etcd's output) when it does
 *   not become healthy in time.
 */
export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdServer> {
  const binary = etcdBinary();
  if (binary === undefined) throw new Error(etcdUnavailableReason());
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    // The ports are free when picked; another process may take one before etcd binds it, so a
    // server that exits at once is started again on new ports.
    const clientPort = await freePort();
    const peerPort = await freePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), "sluice-etcd-"));
    const endpoint = `http://127.0.0.1:${clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const child: ChildProcess = spawn(
      binary,
      [
        "--name",
        "default",
        "--data-dir",
        dataDir,
        "--listen-client-urls",
        endpoint,
        "--advertise-client-urls",
        endpoint,
        "--listen-peer-urls",
        peer,
        "--initial-advertise-peer-urls",
        peer,
        "--initial-cluster",
        `default=${peer}`,
        "--log-level",
        "error",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let output = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
    });
    let exited = false;
    const exit = new Promise<void>((resolve) =>
      child.once("exit", () => {
        exited = true;
        resolve();
      }),
    );
    let stopped: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopped ??= (async () => {
        if (!exited) child.kill("SIGKILL");
        await exit;
        rmSync(dataDir, { recursive: true, force: true });
      })();
      return stopped;
    };
    while (!exited && Date.now() < deadline) {
      if (await healthy(endpoint)) {
        return { endpoint, pid: child.pid as number, stop };
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const exitedEarly = exited;
    await stop();
    if (!exitedEarly || Date.now() >= deadline || attempt >= 3) {
      throw new TimeoutError(
        `etcd (${binary}) did not become healthy at ${endpoint} within ${timeoutMs} ms: ${output.trim()}`,
      );
    }
  }
}
