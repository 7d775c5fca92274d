/** The `type` of every warning the metric system emits through `process.emitWarning`. */
export const METRIC_WARNING_TYPE = "SluiceMetricWarning";

/**
 * Reports a metric problem that must not stop the job (a reporter that threw, a name registered
 * twice): Flink logs these; Sluice emits a process warning, which Node prints once per message.
 */
export function emitMetricWarning(message: string, code = "SLUICE_METRIC_WARNING"): void {
  process.emitWarning(message, { type: METRIC_WARNING_TYPE, code });
}
