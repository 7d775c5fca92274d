import { PollStatus } from "../../io/record-reader.js";
import { JobGraph } from "../../jobmaster/job-graph.js";
import type { AcknowledgeCheckpoint } from "../../messages/acknowledge-checkpoint.js";
import type { DeclineCheckpoint } from "../../messages/decline-checkpoint.js";
import type { JobMasterGateway } from "../../messages/job-master-gateway.js";
import { TaskDeploymentDescriptorCodec } from "../../messages/task-deployment-descriptor.js";
import { TaskNotFoundError } from "../errors.js";
import type { Task } from "../task.js";
import type { TaskExecutor } from "../task-executor.js";
import type { LocalCluster } from "./local-cluster.js";

/** A job master that records what the tasks report about checkpoints. */
export function recordingJobMaster() {
  const acks: AcknowledgeCheckpoint[] = [];
  const declines: DeclineCheckpoint[] = [];
  const jobMaster: JobMasterGateway = {
    updateTaskExecutionState: () => {},
    requestPartitionProducerState: async () => "RUNNING",
    acknowledgeCheckpoint: (ack) => acks.push(ack),
    declineCheckpoint: (decline) => declines.push(decline),
  };
  return { jobMaster, acks, declines };
}

/**
 * The JSON descriptors of `Source` (2) → HASH → `Count` (2), as a checkpointing job in `mode`
 * would get them (`extra` added to each): Source 0, Source 1, Count 0, Count 1.
 */
export async function wordCountDescriptors(
  cluster: LocalCluster,
  executor: TaskExecutor,
  mode = "EXACTLY_ONCE",
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown>[]> {
  const graph = new JobGraph("word count");
  const source = graph.addVertex({ name: "Source", parallelism: 2 });
  const count = graph.addVertex({ name: "Count", parallelism: 2 });
  graph.connect(source, count, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "string",
  });
  const captured: Record<string, unknown>[] = [];
  const deployer = await cluster.startDeployer();
  await deployer.deploy(graph, () => ({
    location: executor.location,
    submitTask: async (descriptor) => {
      captured.push({
        ...TaskDeploymentDescriptorCodec.toJSON(descriptor),
        checkpointingMode: mode,
        ...extra,
      });
    },
    cancelTask: async (attempt) => {
      throw new TaskNotFoundError(`nothing runs ${attempt}`);
    },
    updatePartitions: async () => {},
    releasePartitions: async () => {},
  }));
  return captured;
}

/** Counts the words of reader 0 until the input ends; its state is the map. */
export async function countWords(task: Task): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  task.setCheckpointHandler({ snapshotState: () => counts });
  const reader = task.reader<string>();
  for (;;) {
    const status = reader.pollRecords((word) => {
      counts[word] = (counts[word] ?? 0) + 1;
    }, 128);
    if (status === PollStatus.END_OF_INPUT) return counts;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await new Promise((resolve) => setImmediate(resolve));
  }
}
