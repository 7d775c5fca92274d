import { type JsonObject, type JsonValue, TaskDeploymentError } from "@sluice/runtime";

/** The key of the chain's description in its JobGraph vertex's configuration. */
export const CHAIN_CONFIG_KEY = "sluice.datastream";

/** The version of the chain description this release writes and reads. */
export const CHAIN_CONFIG_VERSION = 1;

/** Where an operator's records go: the chained operator `chained`, or the task's writer `network`. */
export type ChainedOutput = { readonly chained: string } | { readonly network: number };

/** One operator of a chain: its uid, its outputs, and the outputs of each of its side outputs. */
export type ChainedOperatorConfig = {
  readonly uid: string;
  readonly outputs: ChainedOutput[];
  readonly sideOutputs: { readonly tag: string; readonly outputs: ChainedOutput[] }[];
};

/**
 * What a JobGraph vertex of a typed job runs (Flink's `StreamConfig` of the chain): its
 * operators by uid, head first, each before the operators it feeds. The functions are not in
 * it: every process loads the job's module, which builds the same stream graph, and finds them
 * by uid.
 */
export type ChainConfig = {
  readonly version: number;
  /** The job's name, for messages. */
  readonly job: string;
  readonly operators: ChainedOperatorConfig[];
};

/**
 * The chain description in a task's configuration.
 *
 * @throws TaskDeploymentError naming the task when it has none, or one of another version.
 */
export function readChainConfig(configuration: JsonObject, taskName: string): ChainConfig {
  const config = configuration[CHAIN_CONFIG_KEY] as JsonValue | undefined;
  const valid =
    typeof config === "object" &&
    config !== null &&
    !Array.isArray(config) &&
    config.version === CHAIN_CONFIG_VERSION &&
    Array.isArray(config.operators) &&
    config.operators.length > 0;
  if (!valid) {
    throw new TaskDeploymentError(
      `${taskName}: its configuration holds no operator chain of version ${CHAIN_CONFIG_VERSION} under "${CHAIN_CONFIG_KEY}" (found ${JSON.stringify(config)?.slice(0, 200)}): it was not built by this release's StreamExecutionEnvironment`,
    );
  }
  return config as unknown as ChainConfig;
}
