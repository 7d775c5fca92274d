import type { RegisteredTaskManager } from "./registered-task-manager.js";
import { SluiceProcess, type SluiceProcessOptions } from "./sluice-process.js";

/**
 * One `sluice taskmanager` child process of a {@link LocalCluster}: an ordinary task manager that
 * registers over the control plane as a remote one does. Beside what a {@link SluiceProcess}
 * knows, it carries its registration once the job manager has it.
 */
export class LocalTaskManagerProcess extends SluiceProcess {
  /** Its registration with the job manager, once it registered. */
  registered: RegisteredTaskManager | undefined;

  /** Spawns `node <sluice> taskmanager ...args`. */
  constructor(args: readonly string[], options: SluiceProcessOptions = {}) {
    super("taskmanager", args, options);
  }
}
