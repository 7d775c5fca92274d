/**
 * A task manager in a process of its own, as in docs/embedding.md: it connects to the job manager
 * at argv[2]:argv[3] and runs the consumer `consume`, which reads int32 records and throws at the
 * record argv[4] names; it registers the serializer `point` as argv[5] says (`int32` or
 * `int64`), so that a job manager whose own `point` is another serializer sees a mismatch. It
 * runs the compiled packages (child processes do not read TypeScript) and exits 0 when the job
 * manager shuts it down.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TaskManager } from "@sluice/cluster";
import { Int32Serializer, Int64Serializer } from "@sluice/core";
import { Configuration } from "@sluice/runtime";

const [host, port, failAt, point] = process.argv.slice(2);
const taskManager = await TaskManager.start(new Configuration({}), {
  jobManager: { host, port: Number(port) },
  // This package's folder: the shuffle plugins are its dev dependencies.
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  connectRetryMs: 0,
  serializers: { point: point === "int64" ? Int64Serializer.INSTANCE : Int32Serializer.INSTANCE },
  invokables: {
    consume: async (task) => {
      let next = 0;
      for await (const value of task.reader()) {
        if (next === Number(failAt))
          throw new Error(`the consumer rejects record ${next} (${value})`);
        next++;
      }
      return { received: next };
    },
  },
});
const end = await taskManager.terminated;
process.exitCode = end.failed ? 1 : 0;
