import { describeValue } from "@sluice/core";
import type {
  InputGate,
  ResultPartitionWriter,
  ShuffleEnvironment,
  ShuffleEnvironmentContext,
  ShuffleMaster,
  ShuffleMasterContext,
  ShuffleServiceFactory,
} from "@sluice/runtime-api";
import { PluginContractError } from "./errors.js";

/**
 * The plugin as the runtime uses it: the factory and the name it was configured under, which every
 * contract error repeats so that the user knows which plugin broke the SPI.
 */
export interface ShufflePlugin {
  readonly factory: ShuffleServiceFactory;
  /** The configured `shuffle-service-factory.class` value (or any label naming the plugin). */
  readonly value: string;
}

const MASTER_MEMBERS = [
  "start",
  "close",
  "registerJob",
  "unregisterJob",
  "registerPartitionWithProducer",
  "releasePartitionExternally",
  "computeShuffleMemorySizeForTask",
] as const;

const ENVIRONMENT_MEMBERS = [
  "start",
  "createShuffleIOOwnerContext",
  "createResultPartitionWriters",
  "createInputGates",
  "updatePartitionInfo",
  "releasePartitionsLocally",
  "getPartitionsOccupyingLocalResources",
  "close",
] as const;

const WRITER_MEMBERS = [
  "setup",
  "emitRecord",
  "broadcastRecord",
  "broadcastEvent",
  "flush",
  "flushAll",
  "finish",
  "isFinished",
  "fail",
  "release",
  "isReleased",
  "close",
  "isAvailable",
  "getAvailableFuture",
] as const;

const GATE_MEMBERS = [
  "setup",
  "requestPartitions",
  "pollNext",
  "isFinished",
  "resumeConsumption",
  "sendTaskEvent",
  "close",
  "isAvailable",
  "getAvailableFuture",
] as const;

function isThenable(value: unknown): boolean {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * Checks that `value`, returned by `plugin`'s `member`, is an object with every method in
 * `members`. A Promise gets its own message: the SPI's factories are synchronous, and an `async`
 * factory method is the mistake a plugin author most often makes.
 */
function checkObject<T>(
  plugin: ShufflePlugin,
  member: string,
  value: unknown,
  what: string,
  members: readonly string[],
): T {
  if (isThenable(value)) {
    throw new PluginContractError(
      `shuffle plugin "${plugin.value}": ${member} returned a Promise, but it must return the ${what} itself (synchronously; do I/O in start())`,
    );
  }
  if ((typeof value !== "object" && typeof value !== "function") || value === null) {
    throw new PluginContractError(
      `shuffle plugin "${plugin.value}": ${member} must return a ${what}, got ${describeValue(value)}`,
    );
  }
  const record = value as Record<string, unknown>;
  const missing = members.filter((name) => typeof record[name] !== "function");
  if (missing.length > 0) {
    throw new PluginContractError(
      `shuffle plugin "${plugin.value}": the ${what} returned by ${member} lacks the methods ${missing.join(", ")}`,
    );
  }
  return value as T;
}

/**
 * Creates the plugin's ShuffleMaster and checks it against the SPI.
 *
 * @throws PluginContractError (`SLUICE_ERR_PLUGIN_CONTRACT`) naming the plugin and the member.
 */
export function createShuffleMaster(
  plugin: ShufflePlugin,
  context: ShuffleMasterContext,
): ShuffleMaster {
  const master = plugin.factory.createShuffleMaster(context);
  return checkObject(plugin, "createShuffleMaster", master, "ShuffleMaster", MASTER_MEMBERS);
}

/**
 * Creates the plugin's ShuffleEnvironment and checks it against the SPI.
 *
 * @throws PluginContractError (`SLUICE_ERR_PLUGIN_CONTRACT`) naming the plugin and the member.
 */
export function createShuffleEnvironment(
  plugin: ShufflePlugin,
  context: ShuffleEnvironmentContext,
): ShuffleEnvironment {
  const environment = plugin.factory.createShuffleEnvironment(context);
  return checkObject(
    plugin,
    "createShuffleEnvironment",
    environment,
    "ShuffleEnvironment",
    ENVIRONMENT_MEMBERS,
  );
}

/**
 * Starts `environment` and checks that it resolved to a port (an integer in [1, 65535], or -1
 * for local-only environments).
 *
 * @throws PluginContractError otherwise.
 */
export async function startShuffleEnvironment(
  plugin: ShufflePlugin,
  environment: ShuffleEnvironment,
): Promise<number> {
  const started: unknown = environment.start();
  if (!isThenable(started)) {
    throw new PluginContractError(
      `shuffle plugin "${plugin.value}": ShuffleEnvironment.start() must return a Promise of the data port, got ${describeValue(started)}`,
    );
  }
  const port: unknown = await started;
  if (
    !Number.isInteger(port) ||
    ((port as number) < 1 && port !== -1) ||
    (port as number) > 65535
  ) {
    throw new PluginContractError(
      `shuffle plugin "${plugin.value}": ShuffleEnvironment.start() must resolve to a port in [1, 65535] or -1 (local only), got ${describeValue(port)}`,
    );
  }
  return port as number;
}

function checkList<T>(
  plugin: ShufflePlugin,
  member: string,
  list: unknown,
  expected: number,
  what: string,
  members: readonly string[],
): T[] {
  if (!Array.isArray(list) || list.length !== expected) {
    throw new PluginContractError(
      `shuffle plugin "${plugin.value}": ${member} must return an array of ${expected} ${what}s (one per descriptor, in order), got ${Array.isArray(list) ? `${list.length}` : describeValue(list)}`,
    );
  }
  return list.map((item, index) =>
    checkObject<T>(plugin, `${member}[${index}]`, item, what, members),
  );
}

/**
 * Checks what `createResultPartitionWriters` returned: one writer per descriptor.
 *
 * @throws PluginContractError otherwise.
 */
export function checkResultPartitionWriters(
  plugin: ShufflePlugin,
  writers: unknown,
  expected: number,
): ResultPartitionWriter[] {
  return checkList(
    plugin,
    "createResultPartitionWriters",
    writers,
    expected,
    "ResultPartitionWriter",
    WRITER_MEMBERS,
  );
}

/**
 * Checks what `createInputGates` returned: one gate per descriptor.
 *
 * @throws PluginContractError otherwise.
 */
export function checkInputGates(
  plugin: ShufflePlugin,
  gates: unknown,
  expected: number,
): InputGate[] {
  return checkList(plugin, "createInputGates", gates, expected, "InputGate", GATE_MEMBERS);
}
