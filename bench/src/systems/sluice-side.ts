/**
 * One side of a Sluice system in a bench child: its SluiceProcess, started on the first run and
 * reused by the later ones, and what the last run deployed on it (an exchange, or a task),
 * undeployed at cleanup so that the next run starts from an idle process.
 */
import type { Task } from "@sluice/runtime";
import { type RawConfig, type SluiceCode, SluiceProcess, type SluiceTransport } from "./sluice.js";

/** What the side's process starts with. */
export interface SluiceSideParams {
  readonly config: RawConfig;
  /** The serializers and key selectors of the bench's records. */
  readonly code: SluiceCode;
  /** Scrape the process's metrics for Prometheus this often (case 1's metrics exported). */
  readonly metricsScrapeIntervalMs?: number | undefined;
}

/** A side whose runs deploy a `D` on its process, and how a run's `D` is undeployed. */
export class SluiceSide<D> {
  private sluice: SluiceProcess | undefined;
  /** What the last run deployed, until cleanup. */
  deployed: D | undefined;

  constructor(
    private readonly transport: SluiceTransport,
    private readonly params: SluiceSideParams,
    private readonly undeploy: (deployed: D) => Promise<void>,
  ) {}

  /** The side's process: started on the first call. */
  async process(): Promise<SluiceProcess> {
    const p = this.params;
    this.sluice ??= await SluiceProcess.start(
      this.transport,
      p.config,
      p.code,
      p.metricsScrapeIntervalMs,
    );
    return this.sluice;
  }

  /** Undeploys what the last run deployed; the process stays up for the next run. */
  async cleanup(): Promise<void> {
    const deployed = this.deployed;
    this.deployed = undefined;
    if (deployed !== undefined) await this.undeploy(deployed);
  }

  /** Cleans up and stops the process. */
  async close(): Promise<void> {
    await this.cleanup();
    await this.sluice?.close();
    this.sluice = undefined;
  }
}

/** Undeploys a reader's task: a task that ran has ended; one that did not is canceled. */
export async function cancelTask(task: Task): Promise<void> {
  task.cancel();
  await task.terminated;
}

/** Undeploys an exchange: its job is ended and its partitions released. */
export function retireExchange(exchange: { retire(): Promise<void> }): Promise<void> {
  return exchange.retire();
}
