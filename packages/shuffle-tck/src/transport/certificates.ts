/**
 * @sluice/shuffle-tck/certificates: a throw-away certificate authority for tests and benchmarks
 * of TLS, made with the openssl CLI. Free of any test runner, so that a plain script can import
 * it (the transport suites re-export it).
 */
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** PEM files of one certificate authority and the certificates it signed, in a temp folder. */
export interface TestPki {
  /** The temp folder that holds every file. */
  readonly dir: string;
  /** The CA's certificate (PEM): what `security.ssl.internal.ca` names. */
  readonly caCert: string;
  /** Issues a key + certificate signed by this CA; returns the two file paths and the SHA-256 fingerprint. */
  issue(name: string): { key: string; cert: string; fingerprint256: string };
  /** Deletes the folder and every key and certificate in it. */
  remove(): void;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** Creates a throw-away CA with openssl (real keys, generated at test time, never committed). */
export function createTestPki(label: string): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), `sluice-pki-${label}-`));
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"], dir);
  openssl(
    [
      "req",
      "-x509",
      "-new",
      "-key",
      "ca.key",
      "-sha256",
      "-days",
      "2",
      "-subj",
      `/CN=sluice-test-ca-${label}`,
      "-out",
      "ca.crt",
    ],
    dir,
  );
  return {
    dir,
    caCert: path.join(dir, "ca.crt"),
    issue(name: string) {
      openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`], dir);
      openssl(
        ["req", "-new", "-key", `${name}.key`, "-subj", `/CN=${name}`, "-out", `${name}.csr`],
        dir,
      );
      openssl(
        [
          "x509",
          "-req",
          "-in",
          `${name}.csr`,
          "-CA",
          "ca.crt",
          "-CAkey",
          "ca.key",
          "-CAcreateserial",
          "-days",
          "2",
          "-sha256",
          "-out",
          `${name}.crt`,
        ],
        dir,
      );
      const cert = path.join(dir, `${name}.crt`);
      return {
        key: path.join(dir, `${name}.key`),
        cert,
        fingerprint256: new X509Certificate(readFileSync(cert)).fingerprint256,
      };
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
