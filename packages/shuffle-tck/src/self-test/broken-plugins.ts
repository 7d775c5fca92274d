/**
 * Deliberately broken shuffle plugins, to check that the conformance suite catches what it
 * promises to catch. Each decorates a working plugin (named by the environment variable
 * SLUICE_TCK_INNER_PLUGIN, a `shuffle-service-factory.class` value) and breaks one rule. The
 * suite's self-test runs chosen cases against them and expects those cases to fail.
 */
import { Configuration } from "@sluice/runtime";
import { ShuffleServiceLoader } from "@sluice/runtime/plugin";
import {
  ForwardingShuffleEnvironment,
  ForwardingShuffleServiceFactory,
  type ResultPartitionWriter,
  type ShuffleEnvironment,
  type ShuffleEnvironmentContext,
} from "@sluice/runtime-api";

const innerValue = process.env.SLUICE_TCK_INNER_PLUGIN;
if (innerValue === undefined) {
  throw new Error("SLUICE_TCK_INNER_PLUGIN must name the plugin the broken plugins decorate");
}
const inner = await ShuffleServiceLoader.loadShuffleServiceFactory(
  new Configuration({ "shuffle-service-factory.class": innerValue }),
);

/** Every how many records a faulty writer misbehaves. */
const EVERY = 1000;

type WriterOverrides = Partial<Pick<ResultPartitionWriter, "emitRecord" | "flush" | "flushAll">>;

/**
 * `target` with some members replaced; everything else reaches the real object. Writers have no
 * forwarding base: their optional members (unaligned checkpoints) must stay absent when the real
 * writer lacks them, which a Proxy keeps.
 */
function override<T extends object>(target: T, members: Partial<T>): T {
  return new Proxy(target, {
    get(object, property) {
      if (Object.hasOwn(members, property)) return members[property as keyof T];
      const value = Reflect.get(object, property, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}

/** How a broken plugin breaks its writers, and whether its environment closes. */
interface Breakage {
  readonly writer: (real: ResultPartitionWriter) => WriterOverrides;
  readonly closes: boolean;
}

/** The inner plugin's environment with every writer it creates broken, and maybe never closed. */
class BrokenShuffleEnvironment extends ForwardingShuffleEnvironment {
  constructor(
    delegate: ShuffleEnvironment,
    private readonly breakage: Breakage,
  ) {
    super(delegate);
  }

  override createResultPartitionWriters(
    ...args: Parameters<ShuffleEnvironment["createResultPartitionWriters"]>
  ): ResultPartitionWriter[] {
    return super
      .createResultPartitionWriters(...args)
      .map((real) => override(real, this.breakage.writer(real) as Partial<ResultPartitionWriter>));
  }

  override async close(): Promise<void> {
    if (this.breakage.closes) await super.close();
  }
}

/** The inner plugin, its master unchanged, its environments broken as `breakage` says. */
class BrokenShuffleServiceFactory extends ForwardingShuffleServiceFactory {
  constructor(private readonly breakage: Breakage) {
    super(inner);
  }

  override createShuffleEnvironment(context: ShuffleEnvironmentContext): ShuffleEnvironment {
    return new BrokenShuffleEnvironment(super.createShuffleEnvironment(context), this.breakage);
  }
}

/** A factory whose environment wraps every writer it creates with `writer`. */
function breakWriters(writer: Breakage["writer"], closes = true): BrokenShuffleServiceFactory {
  return new BrokenShuffleServiceFactory({ writer, closes });
}

/** Drops every 1000th record. */
export const DroppingShuffleServiceFactory = breakWriters((real) => {
  let count = 0;
  return {
    emitRecord(record, target) {
      if (++count % EVERY !== 0) real.emitRecord(record, target);
    },
  };
});

/** Sends every 1000th record twice. */
export const DuplicatingShuffleServiceFactory = breakWriters((real) => {
  let count = 0;
  return {
    emitRecord(record, target) {
      real.emitRecord(record, target);
      if (++count % EVERY === 0) real.emitRecord(record, target);
    },
  };
});

/** Holds every 1000th record back and sends it after the next one for the same subpartition. */
export const ReorderingShuffleServiceFactory = breakWriters((real) => {
  let count = 0;
  const held = new Map<number, Uint8Array>();
  return {
    emitRecord(record, target) {
      const late = held.get(target);
      if (late === undefined && ++count % EVERY === 0) {
        held.set(target, record.slice());
        return;
      }
      real.emitRecord(record, target);
      if (late !== undefined) {
        held.delete(target);
        real.emitRecord(late, target);
      }
    },
  };
});

/** Flushes nothing: only full buffers and the end of the partition reach the consumer. */
export const NonFlushingShuffleServiceFactory = breakWriters(() => ({
  flush() {},
  flushAll() {},
}));

/** Never closes its environment: the data server keeps the worker process alive. */
export const NeverClosingShuffleServiceFactory = breakWriters(() => ({}), false);
