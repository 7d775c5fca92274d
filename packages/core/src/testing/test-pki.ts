/**
 * `@sluice/core/test-certificates`: a throw-away certificate authority for tests and benchmarks
 * of TLS (the data and control ports, etcd), made with the openssl CLI. It imports no test
 * runner, so that a plain script such as a benchmark can use it too.
 */
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** A key and a certificate a {@link TestPki} issued, as PEM files. */
export interface TestCertificate {
  /** The private key's file (an unencrypted P-256 key). */
  readonly key: string;
  /** The certificate's file. */
  readonly cert: string;
  /** The certificate's SHA-256 fingerprint as Node prints it (`AB:CD:…`), for pinning. */
  readonly fingerprint256: string;
}

/** PEM files of one throw-away certificate authority and the certificates it signed, in a temp folder. */
export interface TestPki {
  /** The temp folder that holds every file. */
  readonly dir: string;
  /**
   * The authority's certificate (PEM): what `security.ssl.internal.ca`,
   * `high-availability.etcd.ssl.ca` and etcd's `--trusted-ca-file` name.
   */
  readonly caCert: string;
  /**
   * Issues a key and a certificate signed by this authority, with `name` as its common name. Each
   * one serves both ends of a mutual TLS connection on loopback: its extended key usages are
   * server and client authentication, and its subject alternative names are the loopback
   * addresses `127.0.0.1` and `::1` and no host name (a peer that verifies the host, as etcd's
   * clients and etcd's own gateway do, accepts it there, and refuses it as `localhost`).
   *
   * Issuing a name again replaces that name's files.
   *
   * @throws Error when `name` is `ca` (the authority's own files) or not a plain file name;
   *   Error (openssl's output) when openssl fails.
   */
  issue(name: string): TestCertificate;
  /** Deletes the folder and every key and certificate in it; idempotent. */
  remove(): void;
}

/**
 * The extensions Go's (etcd's) and Node's TLS stacks check. Go verifies that an authority is one
 * (basic constraints, key usage) and that a certificate allows the side it is presented on; etcd
 * dials its own port with its server certificate, so every certificate is a client one too.
 */
const OPENSSL_CONFIG = `[req]
distinguished_name = dn
[dn]
[authority]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[issued]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth,clientAuth
subjectAltName = IP:127.0.0.1,IP:::1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
`;

/** How long the certificates are valid: a test run never lasts this long. */
const VALID_DAYS = "2";

function openssl(args: readonly string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

function generateKey(name: string, cwd: string): void {
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`], cwd);
}

/**
 * Creates a throw-away certificate authority with the openssl CLI (real keys, made at run time,
 * never committed) in a new temporary folder named after `label`; {@link TestPki.remove} deletes it.
 *
 * @param label - names the folder (`sluice-pki-<label>-…`) and the authority's common name, so
 *   that two authorities of one test (a trusted and a rogue one) are told apart in errors.
 * @throws Error (openssl's output) when the openssl CLI is missing or fails.
 */
export function createTestPki(label: string): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), `sluice-pki-${label}-`));
  try {
    writeFileSync(path.join(dir, "openssl.cnf"), OPENSSL_CONFIG);
    generateKey("ca", dir);
    openssl(
      [
        "req",
        "-x509",
        "-new",
        "-config",
        "openssl.cnf",
        "-extensions",
        "authority",
        "-key",
        "ca.key",
        "-sha256",
        "-days",
        VALID_DAYS,
        "-subj",
        `/CN=sluice-test-ca-${label}`,
        "-out",
        "ca.crt",
      ],
      dir,
    );
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    dir,
    caCert: path.join(dir, "ca.crt"),
    issue(name: string): TestCertificate {
      if (name === "ca" || !/^[\w.-]+$/.test(name)) {
        throw new Error(`a test certificate cannot be named '${name}' (the authority in ${dir})`);
      }
      generateKey(name, dir);
      openssl(
        [
          "req",
          "-new",
          "-config",
          "openssl.cnf",
          "-key",
          `${name}.key`,
          "-subj",
          `/CN=${name}`,
          "-out",
          `${name}.csr`,
        ],
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
          "-sha256",
          "-days",
          VALID_DAYS,
          "-extfile",
          "openssl.cnf",
          "-extensions",
          "issued",
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
