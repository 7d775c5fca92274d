import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from "node:fs";
import https from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { TimeoutError } from "@sluice/core";

/**
 * TLS of a test etcd: PEM files (paths). `createTestPki` of `@sluice/core/test-certificates`
 * makes an authority and certificates that fit: `{ cert, key }` of one it issued, and its `caCert`.
 */
export interface EtcdServerTls {
  /**
   * The server's certificate. It must name 127.0.0.1 as a subject alternative name, and allow
   * client authentication too: etcd's JSON gateway dials etcd's own port with it.
   */
  readonly cert: string;
  /** Its private key. */
  readonly key: string;
  /** The certificate authority that signs the clients' certificates (etcd's `--client-cert-auth`). */
  readonly ca: string;
}

/** Options of {@link startEtcd}. */
export interface StartEtcdOptions {
  /** How long to wait for the server to answer (default 20 s: a loaded machine is slow). */
  readonly timeoutMs?: number;
  /**
   * Serve the client URL over TLS and require a client certificate signed by `tls.ca`; the
   * endpoint is then `https://127.0.0.1:<port>`.
   */
  readonly tls?: EtcdServerTls;
}

/** A real etcd server on loopback, with its own data folder. */
export interface EtcdServer {
  /** Its client URL (`http://127.0.0.1:<port>`): the value for `high-availability.etcd.endpoints`. */
  readonly endpoint: string;
  /** The server's process id (of the latest start). */
  readonly pid: number;
  /** SIGKILLs the server as a crash would, keeping its data folder; {@link EtcdServer.restart} starts it again. */
  kill(): Promise<void>;
  /**
   * Starts the server again (after {@link EtcdServer.kill}) on the same ports and data folder:
   * its keys, revisions and leases are back. Resolves once it answers its health check.
   *
   * @throws TimeoutError (with etcd's output) when it does not become healthy in time.
   */
  restart(): Promise<void>;
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

async function healthy(endpoint: string, tls: EtcdServerTls | undefined): Promise<boolean> {
  if (tls === undefined) {
    try {
      const response = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
      const body = (await response.json()) as { health?: string };
      return response.ok && body.health === "true";
    } catch {
      return false;
    }
  }
  // fetch cannot present a client certificate: node:https can.
  return new Promise((resolve) => {
    const request = https.get(
      `${endpoint}/health`,
      {
        ca: readFileSync(tls.ca),
        cert: readFileSync(tls.cert),
        key: readFileSync(tls.key),
        timeout: 1000,
      },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          body += chunk;
        });
        response.on("end", () =>
          resolve(response.statusCode === 200 && body.includes('"health":"true"')),
        );
        response.on("error", () => resolve(false));
      },
    );
    request.on("error", () => resolve(false));
    request.on("timeout", () => request.destroy());
  });
}

/** One run of the etcd process. */
interface Run {
  readonly child: ChildProcess;
  readonly exit: Promise<void>;
  exited(): boolean;
  output(): string;
}

function launch(
  binary: string,
  dataDir: string,
  endpoint: string,
  peer: string,
  tls: EtcdServerTls | undefined,
): Run {
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
      ...(tls === undefined
        ? []
        : [
            "--cert-file",
            tls.cert,
            "--key-file",
            tls.key,
            "--trusted-ca-file",
            tls.ca,
            "--client-cert-auth",
          ]),
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
  return { child, exit, exited: () => exited, output: () => output };
}

/** Waits until `run` answers its health check; false when it exited or the deadline passed. */
async function becameHealthy(
  run: Run,
  endpoint: string,
  tls: EtcdServerTls | undefined,
  deadline: number,
): Promise<boolean> {
  while (!run.exited() && Date.now() < deadline) {
    if (await healthy(endpoint, tls)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
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
  const { tls } = options;
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    // The ports are free when picked; another process may take one before etcd binds it, so a
    // server that exits at once is started again on new ports.
    const clientPort = await freePort();
    const peerPort = await freePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), "sluice-etcd-"));
    const endpoint = `${tls === undefined ? "http" : "https"}://127.0.0.1:${clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    let run = launch(binary, dataDir, endpoint, peer, tls);
    let stopped: Promise<void> | undefined;
    const kill = async (): Promise<void> => {
      if (!run.exited()) run.child.kill("SIGKILL");
      await run.exit;
    };
    const stop = (): Promise<void> => {
      stopped ??= (async () => {
        await kill();
        rmSync(dataDir, { recursive: true, force: true });
      })();
      return stopped;
    };
    if (await becameHealthy(run, endpoint, tls, deadline)) {
      return {
        endpoint,
        get pid() {
          return run.child.pid as number;
        },
        kill,
        async restart() {
          await kill();
          run = launch(binary, dataDir, endpoint, peer, tls);
          if (!(await becameHealthy(run, endpoint, tls, Date.now() + timeoutMs))) {
            await kill();
            throw new TimeoutError(
              `etcd (${binary}) did not become healthy again at ${endpoint} within ${timeoutMs} ms: ${run.output().trim()}`,
            );
          }
        },
        stop,
      };
    }
    const exitedEarly = run.exited();
    const output = run.output();
    await stop();
    if (!exitedEarly || Date.now() >= deadline || attempt >= 3) {
      throw new TimeoutError(
        `etcd (${binary}) did not become healthy at ${endpoint} within ${timeoutMs} ms: ${output.trim()}`,
      );
    }
  }
}
