/**
 * A job manager in a process of its own, for failover tests that kill -9 the leader: it starts
 * with the configuration argv[2] holds (JSON of flat keys, the high-availability keys among
 * them), prints "listening <port>" once its control plane listens and "leader <token>" once it
 * is elected, and runs until it is killed. With argv[3] = "numbers", once elected it submits the
 * numbers job (a fixed job id) on 2 task managers, as an application's main would on every job
 * manager that becomes leader: the library took the job over from the previous leader by itself
 * (from its latest stored checkpoint), or it is new. It prints "deployed <job id> <restored
 * checkpoint or ->", "recovered <job id>" for a job taken over, and, when the job ends, "finished
 * <JSON of the result>". It runs the compiled packages.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { JobManager } from "@sluice/cluster";
import { Configuration, JobGraph } from "@sluice/runtime";

const configuration = new Configuration(JSON.parse(process.argv[2]));
const mode = process.argv[3] ?? "idle";
const say = (line) => process.stdout.write(`${line}\n`);

/** The numbers job's fixed id: every leader's main submits the same job. */
const JOB_ID = "0123456789abcdef0123456789abcdef";

/** The numbers job of the cluster's tests (test-support/number-tasks.ts). */
function numbersJob() {
  const graph = new JobGraph("ha numbers", JOB_ID);
  const numbers = graph.addVertex({ name: "Numbers", parallelism: 2, invokable: "numbers" });
  const total = graph.addVertex({ name: "Sum", parallelism: 2, invokable: "sum" });
  graph.connect(numbers, total, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "int32",
  });
  return graph;
}

async function runJob(jobManager) {
  await jobManager.waitForTaskManagers(2, 60_000);
  const client = await jobManager.submitJob(numbersJob());
  const restored = client.execution?.latestRestore?.checkpoint.checkpointId;
  say(`deployed ${client.jobId} ${restored ?? "-"}`);
  const result = await client.result;
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
  onJobRecovered: (execution) => say(`recovered ${execution.jobId}`),
  onWarning: () => {},
});
say(`listening ${jobManager.port}`);
if (mode === "numbers") {
  await leadership;
  runJob(jobManager).catch((error) => say(`error ${error.stack ?? error}`));
}
