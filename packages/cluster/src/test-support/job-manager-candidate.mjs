/**
 * A job manager in a process of its own, for failover tests that kill -9 the leader: it starts
 * with the configuration argv[2] holds (JSON of flat keys, the high-availability keys among
 * them), prints "listening <port>" once its control plane listens and "leader <token>" once it
 * is elected, and runs until it is killed. With argv[3] = "numbers", once elected it runs the
 * numbers job on 2 task managers: the job the previous leader left in the high-availability
 * stores, from its latest stored checkpoint, or else a new one. It prints "deployed <job id>
 * <restored checkpoint or ->" and, when the job ends, "finished <JSON of the result>". It runs
 * the compiled packages.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { JobManager } from "@sluice/cluster";
import { JobID } from "@sluice/core";
import { Configuration, JobGraph, loadCompletedCheckpoint } from "@sluice/runtime";

const configuration = new Configuration(JSON.parse(process.argv[2]));
const mode = process.argv[3] ?? "idle";
const say = (line) => process.stdout.write(`${line}\n`);

/** The numbers job of the cluster's tests (test-support/number-tasks.ts), with a given id. */
function numbersJob(jobId) {
  const graph = new JobGraph("ha numbers", jobId === undefined ? undefined : JobID.fromHex(jobId));
  const numbers = graph.addVertex({ name: "Numbers", parallelism: 2, invokable: "numbers" });
  const total = graph.addVertex({ name: "Sum", parallelism: 2, invokable: "sum" });
  graph.connect(numbers, total, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "int32",
  });
  return graph;
}

async function runJob(jobManager) {
  const [recovered] = await jobManager.recoverableJobs();
  const graph = numbersJob(recovered?.jobId);
  const checkpoint = recovered?.latestCheckpoint;
  const restoreFrom =
    checkpoint === undefined
      ? undefined
      : await loadCompletedCheckpoint(checkpoint.externalPointer, graph);
  await jobManager.waitForTaskManagers(2, 60_000);
  const execution = await jobManager.deploy(graph, undefined, {
    recoveryDescription: { job: "numbers" },
    ...(restoreFrom === undefined ? {} : { restoreFrom }),
  });
  say(`deployed ${graph.jobId} ${checkpoint?.checkpointId ?? "-"}`);
  const result = await execution.terminated;
  say(
    `finished ${JSON.stringify({
      status: result.status,
      error: result.error?.message ?? null,
      sums: result.results.get("Sum") ?? [],
      restoredFrom: result.checkpoints.restoredFrom?.toString() ?? null,
    })}`,
  );
}

let elected;
const leadership = new Promise((resolve) => {
  elected = resolve;
});
const jobManager = await JobManager.start(configuration, {
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  onLeadershipGranted: (token) => {
    say(`leader ${token}`);
    elected();
  },
  onTaskManagerRegistered: (tm) => say(`registered ${tm.pid}`),
  onWarning: () => {},
});
say(`listening ${jobManager.port}`);
if (mode === "numbers") {
  await leadership;
  runJob(jobManager).catch((error) => say(`error ${error.stack ?? error}`));
}
