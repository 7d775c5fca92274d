/** The line a process prints when it opens its high-availability services. */
export declare const SERVICES_OPENED: string;
/** The line a process prints when it starts a leader retrieval. */
export declare const RETRIEVAL_STARTED: string;
/** etcd's high-availability services, opened and retrieved with a line on stderr each time. */
export declare class CountingHighAvailabilityServicesFactory {
  createHAServices(configuration: unknown, context: unknown): Promise<unknown>;
}
