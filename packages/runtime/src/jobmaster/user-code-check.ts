import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import type { UserCodeNames } from "../messages/user-code-names.js";
import { TaskDeploymentError } from "../taskexecutor/errors.js";
import { BUILT_IN_SERIALIZERS, IDENTITY_KEY_SELECTOR } from "../taskexecutor/user-code-registry.js";
import type { JobGraph } from "./job-graph.js";

/** The names `graph` uses that its user code must register (the built-in ones left out). */
export function userCodeNamesNeeded(graph: JobGraph): UserCodeNames {
  const invokables = new Set<string>();
  const serializers = new Set<string>();
  const keySelectors = new Set<string>();
  const partitioners = new Set<string>();
  for (const vertex of graph.vertices) {
    if (vertex.invokable !== undefined) invokables.add(vertex.invokable);
  }
  for (const dataSet of graph.dataSets) {
    if (!Object.hasOwn(BUILT_IN_SERIALIZERS, dataSet.serializer)) {
      serializers.add(dataSet.serializer);
    }
    const { keySelector, partitioner } = dataSet.partitioner;
    if (keySelector !== undefined && keySelector !== IDENTITY_KEY_SELECTOR) {
      keySelectors.add(keySelector);
    }
    if (partitioner !== undefined) partitioners.add(partitioner);
  }
  const sorted = (names: Set<string>) => [...names].sort();
  return {
    invokables: sorted(invokables),
    serializers: sorted(serializers),
    keySelectors: sorted(keySelectors),
    partitioners: sorted(partitioners),
  };
}

const KINDS = [
  ["invokables", "invokable"],
  ["serializers", "serializer"],
  ["keySelectors", "key selector"],
  ["partitioners", "partitioner"],
] as const;

/**
 * Checks, before a job is deployed, that every TaskExecutor it may run on resolves every name the
 * graph uses: each loads the graph's job module from its own host (or, without one, offers the
 * code it was started with) and reports what it registers. Gateways that cannot say (without
 * `userCodeNames`) are not checked.
 *
 * @param describe - how a gateway is named in the message (e.g. its task manager and host).
 * @throws TaskDeploymentError naming the job, the module, and for every TaskExecutor that fails
 *   the check where it runs and what it lacks or why the module does not load there.
 */
export async function checkUserCode(
  graph: JobGraph,
  gateways: readonly TaskExecutorGateway[],
  describe: (gateway: TaskExecutorGateway) => string = (gateway) =>
    `the TaskExecutor at ${gateway.location.host}:${gateway.location.dataPort}`,
): Promise<void> {
  const needed = userCodeNamesNeeded(graph);
  const reference = graph.userCodeModule;
  const problems = await Promise.all(
    gateways.map(async (gateway): Promise<string | undefined> => {
      if (gateway.userCodeNames === undefined) return undefined;
      let names: UserCodeNames;
      try {
        names = await gateway.userCodeNames(reference);
      } catch (error) {
        return `${describe(gateway)} cannot load it: ${(error as Error)?.message ?? String(error)}`;
      }
      const missing = KINDS.flatMap(([kind, word]) => {
        const has = new Set(names[kind]);
        return needed[kind].filter((name) => !has.has(name)).map((name) => `${word} "${name}"`);
      });
      return missing.length === 0
        ? undefined
        : `${describe(gateway)} lacks ${missing.join(", ")} (it registers invokables: ${names.invokables.join(", ") || "none"})`;
    }),
  );
  const failed = problems.filter((problem): problem is string => problem !== undefined);
  if (failed.length > 0) {
    const code =
      reference === undefined
        ? "the code its TaskExecutors were started with"
        : `job module ${reference}`;
    throw new TaskDeploymentError(
      `job ${graph.name} (${graph.jobId}) cannot run with ${code}: ${failed.join("; ")}`,
    );
  }
}
