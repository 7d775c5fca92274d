/**
 * A promise together with the functions that settle it, for code that settles a promise from
 * somewhere other than its executor (an event handler, another method, a test step).
 */
export interface Deferred<T> {
  /** Settles when {@link Deferred.resolve} or {@link Deferred.reject} is first called. */
  readonly promise: Promise<T>;
  /** Fulfils {@link Deferred.promise} with `value`; later calls do nothing, as with any promise. */
  readonly resolve: (value: T | PromiseLike<T>) => void;
  /** Rejects {@link Deferred.promise} with `reason`; later calls do nothing. */
  readonly reject: (reason?: unknown) => void;
}

/**
 * Creates a {@link Deferred}: `Promise.withResolvers()` for Node 20, which lacks it.
 *
 * ```ts
 * const opened = deferred();
 * socket.once("open", () => opened.resolve());
 * await opened.promise;
 * ```
 */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T | PromiseLike<T>) => void;
  let reject!: (reason?: unknown) => void;
  // The executor runs synchronously, so both functions are set before the constructor returns.
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
