/**
 * The job manager of the long-session test, in a process of its own: it listens on 127.0.0.1
 * (a free port, printed as "listening <port>"), waits for two task managers, runs argv[2] jobs
 * one after the other, streaming (checkpointed, pipelined) and batch (blocking) in turn, and
 * after each one, once the task managers run nothing and hold no partition, prints one line
 * "footprint <JSON>": the job's index and status and what each process holds (its own and each
 * task manager's; see session-jobs.mjs). Then it shuts the task managers down and exits. It
 * runs the compiled packages, with `--expose-gc`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { JobManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import { footprint, sessionJob, track } from "./session-jobs.mjs";

const jobs = Number(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);
const checkpoints = mkdtempSync(path.join(tmpdir(), "sluice-session-"));
const base = {
  "shuffle-service-factory.class": "tcp",
  "jobmanager.rpc.address": "127.0.0.1",
  "jobmanager.rpc.port": 0,
  "taskmanager.memory.network.min": "32mb",
  "taskmanager.memory.segment-size": "16kb",
  "state.checkpoints.dir": checkpoints,
};
const streaming = new Configuration({
  ...base,
  "execution.checkpointing.interval": "20ms",
  "state.checkpoints.num-retained": 1,
});
const jobManager = await JobManager.start(new Configuration(base), {
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  onWarning: (message) => process.stderr.write(`warning: ${message}\n`),
});
say(`listening ${jobManager.port}`);

/** Runs job `index` to its end; what it leaves is measured once nothing here holds it. */
async function runJob(index) {
  const batch = index % 2 === 1;
  const execution = await jobManager.deploy(
    sessionJob(index, batch),
    undefined,
    batch ? {} : { configuration: streaming },
  );
  track("JobExecution", [execution]);
  track("CheckpointCoordinator", [execution.checkpointCoordinator]);
  track("ExecutionVertex", execution.executionVertices);
  return execution.terminated;
}
try {
  const taskManagers = await jobManager.waitForTaskManagers(2, 60_000);
  let leaked = false;
  for (let index = 0; index < jobs; index++) {
    const { status, checkpoints: taken } = await runJob(index);
    // A job's tasks, partitions and what held them are released on each process's own time
    // (reports in flight, files deleted in the background): measure once they are gone, or
    // after a deadline (the leak then shows in the footprint, and later jobs do not wait for
    // what will not go).
    let held;
    let own;
    const deadline = Date.now() + 3_000;
    for (;;) {
      held = await Promise.all(taskManagers.map((tm) => tm.call("footprint", null)));
      own = footprint();
      const busy = held.some((h) => h.runningTasks > 0 || h.partitions > 0);
      const reachable = [own, ...held].some((f) => Object.keys(f.reachable).length > 0);
      if (!busy && (!reachable || leaked)) break;
      if (Date.now() > deadline) {
        leaked = reachable;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    say(
      `footprint ${JSON.stringify({
        index,
        status,
        checkpoints: taken.completed,
        jobManager: own,
        taskManagers: held,
      })}`,
    );
  }
} finally {
  await jobManager.close({ reason: "the session ended" });
  rmSync(checkpoints, { recursive: true, force: true });
}
