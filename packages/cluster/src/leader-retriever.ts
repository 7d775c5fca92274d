import { TimeoutError } from "@sluice/core";
import type { PluginLoaderOptions } from "@sluice/runtime";
import {
  HighAvailabilityOptions,
  type HighAvailabilityServices,
  type LeaderInformation,
  type LeaderRetrievalService,
  type ReadableConfig,
} from "@sluice/runtime-api";
import { EmbeddedHighAvailabilityServices } from "./embedded-high-availability-services.js";
import { loadHighAvailabilityServices } from "./high-availability-services-loader.js";

/**
 * Follows the leading job manager through the leader retrieval of the high-availability services
 * that `high-availability.type` names (Flink's `LeaderRetriever`, which its `RestClusterClient`
 * keeps for its whole life): the services are opened once, the latest leader is kept, and a
 * caller waits for a leader that suits it (one that published a REST endpoint, one that is not
 * the leader it just lost) without opening anything again. {@link close} stops it.
 */
export class LeaderRetriever {
  private current: LeaderInformation | undefined;
  private failure: Error | undefined;
  private readonly listeners = new Set<() => void>();
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly services: HighAvailabilityServices,
    private readonly retrieval: LeaderRetrievalService,
    /** The election it follows, for messages: `high-availability.type: etcd, cluster c1`. */
    private readonly election: string,
  ) {}

  /**
   * Opens the services and starts following their leader; `undefined` with `none` (the embedded
   * services), which have nothing to follow.
   *
   * @throws the services' errors (ConfigurationError, HighAvailabilityUnavailableError) and the
   *   loader's.
   */
  static async open(
    configuration: ReadableConfig & { readonly configDir?: string | undefined },
    onWarning: (message: string) => void,
    loader: PluginLoaderOptions = {},
  ): Promise<LeaderRetriever | undefined> {
    const services = await loadHighAvailabilityServices(configuration, { onWarning }, loader);
    if (services instanceof EmbeddedHighAvailabilityServices) {
      await services.close();
      return undefined;
    }
    const retriever = new LeaderRetriever(
      services,
      services.getJobManagerLeaderRetriever(),
      `${HighAvailabilityOptions.HA_MODE.key}: ${configuration.get(HighAvailabilityOptions.HA_MODE)}, cluster ${configuration.get(HighAvailabilityOptions.HA_CLUSTER_ID)}`,
    );
    try {
      await retriever.retrieval.start({
        notifyLeaderAddress: (leader) => {
          retriever.current = leader;
          retriever.changed();
        },
        handleError: (error) => {
          retriever.failure ??= error;
          retriever.changed();
        },
      });
    } catch (error) {
      await retriever.close();
      throw error;
    }
    return retriever;
  }

  /** The leader retrieval reported last; `undefined` while there is none. */
  get leader(): LeaderInformation | undefined {
    return this.current;
  }

  /**
   * Calls `listener` after every change of leader (and once retrieval failed for good). Returns
   * the function that stops the calls.
   */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The leader now, or the first one after it, that `accept` takes.
   *
   * @param notFound - what was not found, for the timeout's message ("no job manager was elected
   *   leader").
   * @param signal - stops the wait: it rejects with the reason.
   * @throws TimeoutError when none came within `timeoutMs`; the error retrieval failed with.
   */
  awaitLeader(
    accept: (leader: LeaderInformation) => boolean,
    timeoutMs: number,
    notFound: string,
    signal?: AbortSignal,
  ): Promise<LeaderInformation> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        stopListening();
        signal?.removeEventListener("abort", aborted);
      };
      const check = () => {
        if (this.failure !== undefined) {
          done();
          reject(this.failure);
        } else if (this.current !== undefined && accept(this.current)) {
          done();
          resolve(this.current);
        }
      };
      const aborted = () => {
        done();
        reject(signal?.reason);
      };
      const stopListening = this.onChange(check);
      timer = setTimeout(() => {
        done();
        reject(new TimeoutError(`${notFound} within ${timeoutMs} ms (${this.election})`));
      }, timeoutMs);
      if (signal?.aborted) {
        aborted();
        return;
      }
      signal?.addEventListener("abort", aborted, { once: true });
      check();
    });
  }

  /** Stops following and closes the services. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.listeners.clear();
      try {
        await this.retrieval.stop();
      } finally {
        await this.services.close();
      }
    })();
    return this.closing;
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
