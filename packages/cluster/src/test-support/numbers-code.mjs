// The numbers job's code as a job module, for task managers whose slots run on threads (they
// load code by reference, and run JavaScript): plain JavaScript over the built @sluice/runtime.
const RECORDS = 20_000;

async function numbers(task) {
  const writer = task.writer();
  for (let i = 0; i < RECORDS; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.emit(i);
  }
  return RECORDS;
}

async function sum(task) {
  let count = 0;
  let total = 0;
  for await (const value of task.reader()) {
    count++;
    total += value;
  }
  return { count, sum: total };
}

/** Runs until its task is canceled. */
function waitForCancel(task) {
  return new Promise((resolve) => task.signal.addEventListener("abort", () => resolve(null)));
}

export default { userCode: { invokables: { numbers, sum, waitForCancel } } };
