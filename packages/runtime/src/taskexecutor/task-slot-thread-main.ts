/**
 * The entry of a slot thread (`taskmanager.task-slots.mode: threaded`): the thread runs its task
 * slot on its `parentPort`. An error its code throws outside its tasks ends the thread: the main
 * thread then fails the slot's tasks with it and starts a new thread for the slot.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { TaskSlotThreadInit } from "./task-slot-messages.js";
import { runTaskSlot } from "./task-slot-runner.js";

if (parentPort === null) throw new Error("task-slot-thread-main runs only as a worker thread");

try {
  await runTaskSlot(parentPort, workerData as TaskSlotThreadInit, (error) => {
    // Uncaught, it ends the thread: the main thread sees it as the thread's error.
    process.nextTick(() => {
      throw error;
    });
  });
} catch {
  // The slot posted `start-failed` with its error before it gave up.
  process.exit(1);
}
