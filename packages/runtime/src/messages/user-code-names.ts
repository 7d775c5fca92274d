/**
 * The names a TaskExecutor resolves in task deployment descriptors, beyond the built-in
 * serializers (`string`, `int32`, ...) and the `value` key selector: what the job side checks a
 * job graph against before it deploys. Each list is sorted.
 */
export interface UserCodeNames {
  readonly invokables: readonly string[];
  readonly serializers: readonly string[];
  readonly keySelectors: readonly string[];
  readonly partitioners: readonly string[];
}
