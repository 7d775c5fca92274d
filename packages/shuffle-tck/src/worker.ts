/**
 * A conformance worker: one process with one ShuffleEnvironment of the plugin under test, driven
 * by the suite over IPC. It uses only the public SPI (loader, environment, writers, gates), so
 * any plugin can be tested, and it exits by itself after `close` — a handle left open by the
 * plugin keeps it alive, which the suite reports.
 */
import { CancelledError, ExecutionAttemptID, ResourceID } from "@sluice/core";
import { assignKeyToParallelOperator, Configuration, ShuffleServiceLoader } from "@sluice/runtime";
import {
  type InputGate,
  InputGateDeploymentDescriptorCodec,
  type PartitionProducerStateProvider,
  ResultPartitionDeploymentDescriptorCodec,
  type ResultPartitionWriter,
  type ShuffleEnvironment,
} from "@sluice/runtime-api";
import {
  type ConsumeOptions,
  type ConsumeResult,
  type ProducePlan,
  type ProduceResult,
  type Request,
  type Response,
  toWireError,
} from "./messages.js";
import { encodeRecord, RecordChecker } from "./records.js";

const RUNNING: PartitionProducerStateProvider = {
  requestPartitionProducerState: async () => "RUNNING",
};

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

interface GateState {
  readonly gate: InputGate;
  readonly checker: RecordChecker;
  stalled: boolean;
  resume: (() => void) | undefined;
}

interface WriterState {
  readonly writer: ResultPartitionWriter;
  readonly index: number;
  emitted: number;
}

class Worker {
  private env: ShuffleEnvironment | undefined;
  private readonly writers = new Map<string, WriterState>();
  private readonly gates = new Map<string, GateState>();

  async handle(request: Request): Promise<unknown> {
    switch (request.cmd) {
      case "init": {
        const config = new Configuration(request.config);
        const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
          config,
          request.configDir === undefined ? {} : { configDir: request.configDir },
        );
        const resourceId = new ResourceID();
        this.env = factory.createShuffleEnvironment({
          configuration: config,
          taskExecutorResourceId: resourceId,
          networkMemorySize: 0,
          localCommunicationOnly: false,
          hostAddress: "127.0.0.1",
          numberOfSlots: 1,
          tmpDirPaths: [],
        });
        const port = await this.env.start();
        return { port, resourceId: resourceId.toString() };
      }
      case "createWriters": {
        if (request.delayMs !== undefined) await new Promise((r) => setTimeout(r, request.delayMs));
        const env = this.environment();
        const ctx = env.createShuffleIOOwnerContext(
          request.owner,
          ExecutionAttemptID.parse(request.attempt),
        );
        const descriptors = request.descriptors.map((d) =>
          ResultPartitionDeploymentDescriptorCodec.fromJSON(d),
        );
        const writers = env.createResultPartitionWriters(ctx, descriptors);
        const names: string[] = [];
        writers.forEach((writer, i) => {
          writer.setup();
          const name = `${request.owner}/${i}`;
          const index = descriptors[i]?.partitionDescriptor.partitionId.partitionNum ?? i;
          this.writers.set(name, { writer, index, emitted: 0 });
          names.push(name);
        });
        return { writers: names };
      }
      case "produce":
        return this.produce(this.writerState(request.writer), request.plan);
      case "producerStatus": {
        const state = this.writerState(request.writer);
        return {
          emitted: state.emitted,
          available: state.writer.isAvailable(),
          released: state.writer.isReleased(),
        };
      }
      case "cancelProducer": {
        // What a task cancel does to its output: release the partition with a cancellation cause.
        const state = this.writerState(request.writer);
        state.writer.release(new CancelledError(`task ${request.writer} was cancelled`));
        return {};
      }
      case "createGates": {
        const env = this.environment();
        const ctx = env.createShuffleIOOwnerContext(
          request.owner,
          ExecutionAttemptID.parse(request.attempt),
        );
        const descriptors = request.descriptors.map((d) =>
          InputGateDeploymentDescriptorCodec.fromJSON(d),
        );
        const gates = env.createInputGates(ctx, RUNNING, descriptors);
        const names: string[] = [];
        gates.forEach((gate, i) => {
          gate.setup();
          gate.requestPartitions();
          const name = `${request.owner}/${i}`;
          const subpartition = descriptors[i]?.consumedSubpartitionIndexRange.start ?? 0;
          this.gates.set(name, {
            gate,
            checker: new RecordChecker(gate.numberOfInputChannels, subpartition),
            stalled: false,
            resume: undefined,
          });
          names.push(name);
        });
        return { gates: names };
      }
      case "consume":
        return this.consume(this.gateState(request.gate), request.options);
      case "consumerStatus": {
        const state = this.gateState(request.gate);
        return { counts: [...state.checker.counts], finished: state.gate.isFinished() };
      }
      case "unstall": {
        const state = this.gateState(request.gate);
        state.stalled = false;
        state.resume?.();
        return {};
      }
      case "status":
        return {
          partitionsOccupyingLocalResources:
            this.environment().getPartitionsOccupyingLocalResources().length,
        };
      case "close": {
        for (const { checker } of this.gates.values()) checker.close();
        for (const { gate } of this.gates.values()) await gate.close();
        for (const { writer } of this.writers.values()) writer.close();
        await this.env?.close();
        this.gates.clear();
        this.writers.clear();
        return {};
      }
    }
  }

  private async produce(state: WriterState, plan: ProducePlan): Promise<ProduceResult> {
    const { writer } = state;
    const channels = writer.numberOfSubpartitions;
    const seqs = new Array<number>(channels).fill(0);
    let backPressured = false;
    const total = plan.keyed ? plan.records : plan.records * channels;
    try {
      for (let i = 0; i < total; i++) {
        if (!writer.isAvailable()) {
          backPressured = true;
          await writer.getAvailableFuture();
        }
        if (plan.failAfter !== undefined && i === plan.failAfter) {
          writer.fail(new Error(plan.failMessage ?? "producer failed on purpose"));
          return { emitted: state.emitted, backPressured };
        }
        const target = plan.keyed
          ? assignKeyToParallelOperator(`key-${state.index}-${i}`, 128, channels)
          : i % channels;
        const seq = seqs[target] as number;
        seqs[target] = seq + 1;
        writer.emitRecord(encodeRecord(state.index, target, seq, plan.padding), target);
        state.emitted++;
        if (plan.flushEvery && state.emitted % plan.flushEvery === 0) writer.flushAll();
        if (i % 1024 === 1023) await yieldToLoop();
      }
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.finish();
      // A task closes its writers when it ends; the producer counts as a user of its partition
      // until then (Flink's n + 1 users).
      writer.close();
      return { emitted: state.emitted, backPressured };
    } catch (error) {
      if (writer.isReleased()) {
        return { emitted: state.emitted, backPressured, releasedError: toWireError(error) };
      }
      throw error;
    }
  }

  private async consume(state: GateState, options: ConsumeOptions): Promise<ConsumeResult> {
    const { gate, checker } = state;
    state.stalled = options.stalled === true;
    let received = 0;
    try {
      while (!gate.isFinished()) {
        if (state.stalled) {
          await new Promise<void>((resolve) => {
            state.resume = resolve;
          });
          state.resume = undefined;
        }
        const next = gate.pollNext();
        if (next === undefined) {
          if (gate.isFinished()) break;
          await gate.getAvailableFuture();
          continue;
        }
        if (next.buffer !== undefined) {
          checker.accept(next.channelIndex, next.buffer);
          received++;
          if (options.stallAfter !== undefined && received === options.stallAfter) {
            state.stalled = true;
          }
        }
        if (
          options.cancelAfter !== undefined &&
          checker.counts.reduce((a, b) => a + b, 0) >= options.cancelAfter
        ) {
          await gate.close();
          return { counts: [...checker.counts], violations: checker.violations, finished: false };
        }
        if (received % 64 === 63) await yieldToLoop();
      }
      if (checker.hasUnfinishedData())
        checker.violations.push("a channel ended in the middle of a record");
      return { counts: [...checker.counts], violations: checker.violations, finished: true };
    } catch (error) {
      return {
        counts: [...checker.counts],
        violations: checker.violations,
        finished: false,
        error: toWireError(error),
      };
    }
  }

  private environment(): ShuffleEnvironment {
    if (this.env === undefined) throw new Error("worker not initialised (send init first)");
    return this.env;
  }

  private writerState(name: string): WriterState {
    const state = this.writers.get(name);
    if (state === undefined) throw new Error(`no writer ${name}`);
    return state;
  }

  private gateState(name: string): GateState {
    const state = this.gates.get(name);
    if (state === undefined) throw new Error(`no gate ${name}`);
    return state;
  }
}

const worker = new Worker();
const send = (response: Response) => process.send?.(response);

process.on("message", (request: Request) => {
  worker.handle(request).then(
    (result) => {
      send({ id: request.id, ok: true, result: result ?? {} });
      if (request.cmd === "close") process.disconnect();
    },
    (error: unknown) => send({ id: request.id, ok: false, error: toWireError(error) }),
  );
});
