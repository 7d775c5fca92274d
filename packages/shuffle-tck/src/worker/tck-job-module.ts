/**
 * The kit's task code as a job module: a conformance worker hands it to its TaskExecutor by
 * reference (`userCodeModule`), so that slot threads (`taskmanager.task-slots.mode: threaded`)
 * load it too. Each thread that loads it has its own {@link tckTasks}, and answers the worker's
 * questions about its tasks (see `tck-task-queries.ts`).
 */
import { TckTasks } from "../tck-tasks.js";
import { serveTckTaskQueries } from "./tck-task-queries.js";

/** This thread's instance of the kit's code and its tasks' progress. */
export const tckTasks = new TckTasks();
serveTckTaskQueries(tckTasks);

/** The job module: the kit's invokables, serializer and key selector. */
export default { userCode: tckTasks.userCode() };
