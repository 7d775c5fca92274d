import { Configuration, JobDeployer } from "@sluice/runtime";
import { afterAll, afterEach, beforeAll, describe } from "vitest";
import { blockingCases } from "./blocking-cases.js";
import { exchangeCases } from "./exchange-cases.js";
import { failureCases } from "./failure-cases.js";
import { flushCases } from "./flush-cases.js";
import { pipelinedRefusalCases } from "./pipelined-refusal-cases.js";
import { TckCluster } from "./tck-cluster.js";

/** What the suite needs to know about the plugin under test. */
export interface ShuffleConformanceOptions {
  /** A label for the describe block, e.g. "tcp". */
  readonly name: string;
  /** The `shuffle-service-factory.class` value, resolved by the loader in every process. */
  readonly factory: string;
  /** Folder bare specifiers resolve from (default: the current working directory). */
  readonly configDir?: string;
  /** Further configuration for every process (memory sizes, timeouts, TLS, …). */
  readonly configuration?: Readonly<Record<string, unknown>>;
  /**
   * Records per producer in the exactly-once case (default 500 000, so 10^6 in all; the
   * environment variable SLUICE_TCK_RECORDS overrides it, e.g. 5 000 000 in `pnpm test:long`).
   */
  readonly records?: number;
  /**
   * The plugin stores BLOCKING partitions only (a remote shuffle service): the cases of pipelined
   * exchanges are replaced by ones that expect a pipelined job to be refused at once with
   * `SLUICE_ERR_CONFIG`; the blocking cases run as for any plugin.
   */
  readonly blockingOnly?: boolean;
}

/**
 * How long the suite's set-up and clean-up may take. Set on each hook, as each case sets its own,
 * so that the suite runs under a plugin author's vitest without a configuration (whose default
 * of 10 s a loaded machine can exceed while worker processes start or are reaped).
 */
const HOOK_TIMEOUT_MS = 60_000;

/** Small pools, short timeouts: limits are reached quickly and failures show up fast. */
const SUITE_DEFAULTS: Readonly<Record<string, unknown>> = {
  "taskmanager.memory.network.min": "16mb",
  "taskmanager.memory.network.max": "16mb",
  "taskmanager.memory.segment-size": "8kb",
  "taskmanager.host": "127.0.0.1",
  "taskmanager.data.bind-host": "127.0.0.1",
  "execution.buffer-timeout.interval": "10ms",
  "taskmanager.network.partition-request-timeout": "10s",
  "taskmanager.network.request-backoff.max": "1s",
};

/**
 * Registers the conformance suite for one shuffle plugin with vitest. Every case runs the path an
 * application runs: the plugin's ShuffleMaster in a JobDeployer in the test process, worker
 * processes each with a TaskExecutor of the plugin, task deployment descriptors as JSON between
 * them, typed records through RecordWriters and RecordReaders.
 */
export function describeShuffleServiceConformance(options: ShuffleConformanceOptions): void {
  const config: Record<string, unknown> = {
    ...SUITE_DEFAULTS,
    ...options.configuration,
    "shuffle-service-factory.class": options.factory,
  };
  const records = Number(process.env.SLUICE_TCK_RECORDS ?? 0) || options.records || 500_000;

  describe(`shuffle service conformance: ${options.name}`, () => {
    let deployer: JobDeployer;
    let cluster: TckCluster;

    beforeAll(async () => {
      const configuration = new Configuration(
        config,
        options.configDir === undefined ? {} : { configDir: options.configDir },
      );
      deployer = await JobDeployer.start(configuration);
    }, HOOK_TIMEOUT_MS);

    afterAll(async () => {
      await deployer?.close();
    }, HOOK_TIMEOUT_MS);

    afterEach(async () => {
      await cluster.shutdown();
    }, HOOK_TIMEOUT_MS);

    const current = () => {
      cluster ??= new TckCluster(deployer, config, options.configDir, options.name);
      return cluster;
    };

    if (options.blockingOnly === true) {
      describe("pipelined exchanges refused", () => pipelinedRefusalCases(current));
    } else {
      describe("exchanges", () => exchangeCases(current, records));
      describe("flushing", () => flushCases(current));
      describe("failures", () => failureCases(current));
    }
    describe("blocking partitions", () => blockingCases(current));
  });
}
