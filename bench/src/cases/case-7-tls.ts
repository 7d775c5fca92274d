/**
 * Case 7: TLS on the data port — Sluice TCP and WS, plaintext beside mutual TLS.
 */
import { createTestPki } from "@sluice/core/test-certificates";
import type { CaseDefinition } from "./case-definition.js";
import { findRow } from "./result-rows.js";
import { baseParams, sluiceConfig } from "./sluice-params.js";
import { throughputRows } from "./throughput-rows.js";

/**
 * Throw-away PEM files for mutual TLS, made with the openssl CLI by the helper the TLS tests use:
 * one CA and one certificate that both sides present.
 */
function makeTlsMaterial(): { config: Record<string, unknown>; remove(): void } {
  const pki = createTestPki("bench");
  try {
    const worker = pki.issue("worker");
    return {
      config: {
        "security.ssl.internal.enabled": "true",
        "security.ssl.internal.key": worker.key,
        "security.ssl.internal.cert": worker.cert,
        "security.ssl.internal.ca": pki.caCert,
      },
      remove: () => pki.remove(),
    };
  } catch (error) {
    pki.remove();
    throw error;
  }
}

export const case7: CaseDefinition = {
  id: 7,
  name: "TLS on the data port: 100 B keyed records over 4 channels, Sluice TCP and WS, plaintext vs mutual TLS",
  async run(report) {
    const tls = makeTlsMaterial();
    try {
      const small = (extra: Record<string, unknown>) =>
        baseParams({ config: sluiceConfig(100, extra) });
      const rows = await throughputRows(
        report,
        {
          metric: "records/s",
          baseline: (row) => row.system.replace("+tls", "").replace("wss", "ws"),
        },
        [
          ["sluice-tcp 100 B", "sluice-tcp", small({})],
          ["sluice-tcp+tls 100 B", "sluice-tcp", small(tls.config)],
          ["sluice-ws 100 B", "sluice-ws", small({})],
          ["sluice-wss 100 B", "sluice-ws", small(tls.config)],
        ],
      );
      const ratio = (system: string) => findRow(rows, system)?.ratio;
      return {
        rows,
        goals: [
          report.goal({
            text: "Sluice TCP with TLS ≥ 40% of plaintext (100 B records)",
            measured: ratio("sluice-tcp+tls 100 B"),
            comparison: "≥",
            target: 0.4,
            unit: "× plaintext",
          }),
          report.goal({
            text: "Sluice WS with wss ≥ 40% of plaintext (100 B records)",
            measured: ratio("sluice-wss 100 B"),
            comparison: "≥",
            target: 0.4,
            unit: "× plaintext",
          }),
        ],
      };
    } finally {
      tls.remove();
    }
  },
};
