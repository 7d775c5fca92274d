import { type ChildProcess, fork } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Request, Response, WireError } from "./messages.js";

/** Distributes a Request over its union members while removing `id`. */
type WithoutId<T> = T extends unknown ? Omit<T, "id"> : never;

/** Where the compiled worker lives (tests may run from source; children always run built JS). */
export function workerScriptPath(): string {
  const here = fileURLToPath(import.meta.url);
  const candidates = [
    here.replace(/[/\\]src[/\\][^/\\]+$/, "/dist/worker.js"),
    here.replace(/[^/\\]+$/, "worker.js"),
  ];
  const found = candidates.find((candidate) => candidate.endsWith(".js") && existsSync(candidate));
  if (found === undefined) {
    throw new Error(
      `the conformance worker is not built (looked for ${candidates.join(", ")}); run \`pnpm build\` first`,
    );
  }
  return found;
}

/** A worker's error, rethrown in the suite with the worker's code and name. */
export class WorkerError extends Error {
  readonly code: string | undefined;
  constructor(readonly wire: WireError) {
    super(`${wire.name}${wire.code ? ` (${wire.code})` : ""}: ${wire.message}`);
    this.code = wire.code;
  }
}

/** The suite's handle on one worker process. */
export class WorkerClient {
  readonly child: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private exited = false;
  readonly exitPromise: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly label: string) {
    this.child = fork(workerScriptPath(), ["shuffle-tck-worker", label], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      execArgv: [],
    });
    this.child.on("message", (message: Response) => {
      const waiter = this.pending.get(message.id);
      if (waiter === undefined) return;
      this.pending.delete(message.id);
      if (message.ok) waiter.resolve(message.result);
      else waiter.reject(new WorkerError(message.error));
    });
    this.exitPromise = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.exited = true;
        for (const waiter of this.pending.values()) {
          waiter.reject(new Error(`worker ${label} exited (code ${code}, signal ${signal})`));
        }
        this.pending.clear();
        resolve({ code, signal });
      });
    });
  }

  /** Sends a request and waits for its answer (rejects if the worker dies). */
  request<T>(request: WithoutId<Request>): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`worker ${this.label} has exited`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ ...request, id } as Request);
    });
  }

  /** Closes the environment and waits for the process to exit on its own. */
  async close(timeoutMs = 10_000): Promise<{ code: number | null; exitedByItself: boolean }> {
    if (this.exited) return { code: this.child.exitCode, exitedByItself: true };
    await this.request({ cmd: "close" });
    const timeout = new Promise<"timeout">((resolve) =>
      setTimeout(() => resolve("timeout"), timeoutMs).unref(),
    );
    const outcome = await Promise.race([this.exitPromise, timeout]);
    if (outcome === "timeout") {
      this.kill();
      return { code: null, exitedByItself: false };
    }
    return { code: outcome.code, exitedByItself: true };
  }

  kill(): void {
    if (!this.exited) this.child.kill("SIGKILL");
  }
}
