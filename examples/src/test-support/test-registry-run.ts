/** The test run's registry folder, which the global set-up hands to the test files. */
export interface TestRegistryRun {
  /** A folder of this vitest run: the registry's storage, port, log and state. */
  readonly folder: string;
  /** The vitest process: the registry stops by itself when it is gone. */
  readonly vitestPid: number;
}

/** The key under which the global set-up provides the {@link TestRegistryRun}. */
export const TEST_REGISTRY_RUN = "sluiceTestRegistryRun";

declare module "vitest" {
  export interface ProvidedContext {
    [TEST_REGISTRY_RUN]: TestRegistryRun;
  }
}
