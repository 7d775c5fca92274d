import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** PEM files of a throw-away certificate authority, an etcd server and a client, in a temp folder. */
export interface TestCertificates {
  /** The temporary folder that holds every file. */
  readonly dir: string;
  /** The authority that signs both certificates (what etcd's `--trusted-ca-file` names). */
  readonly ca: string;
  /** etcd's certificate, for IP 127.0.0.1 (Node checks the address against it), also a client's. */
  readonly serverCert: string;
  /** The private key of {@link TestCertificates.serverCert}. */
  readonly serverKey: string;
  /** A job manager's client certificate (etcd's `--client-cert-auth`). */
  readonly clientCert: string;
  /** The private key of {@link TestCertificates.clientCert}. */
  readonly clientKey: string;
  /** Deletes the folder. */
  remove(): void;
}

/**
 * The extensions Go's and Node's TLS stacks require of each certificate. etcd's gateway dials
 * etcd's own gRPC port with the server certificate, so that one is a client certificate too.
 */
const CONFIG = `[req]
distinguished_name = dn
[dn]
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
[server_ext]
subjectAltName = IP:127.0.0.1
extendedKeyUsage = serverAuth, clientAuth
[client_ext]
extendedKeyUsage = clientAuth
`;

/**
 * Creates a certificate authority, an etcd server certificate (subject alternative name
 * IP:127.0.0.1) and a client certificate with the openssl CLI: real keys, made at test time,
 * never committed. `startEtcd({ tls: { cert: serverCert, key: serverKey, ca } })` serves etcd
 * with them; `high-availability.etcd.ssl.ca`, `.cert` and `.key` name `ca`, `clientCert` and
 * `clientKey`.
 */
export function createTestCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-etcd-pki-"));
  const openssl = (...args: string[]) =>
    execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  writeFileSync(path.join(dir, "openssl.cnf"), CONFIG);
  const key = (name: string) =>
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`);
  key("ca");
  openssl(
    "req",
    "-x509",
    "-new",
    "-config",
    "openssl.cnf",
    "-extensions",
    "ca_ext",
    "-key",
    "ca.key",
    "-subj",
    "/CN=sluice-etcd-test-ca",
    "-days",
    "2",
    "-out",
    "ca.crt",
  );
  for (const [name, extensions] of [
    ["server", "server_ext"],
    ["client", "client_ext"],
  ] as const) {
    key(name);
    openssl(
      "req",
      "-new",
      "-config",
      "openssl.cnf",
      "-key",
      `${name}.key`,
      "-subj",
      `/CN=sluice-etcd-test-${name}`,
      "-out",
      `${name}.csr`,
    );
    openssl(
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
      "-extfile",
      "openssl.cnf",
      "-extensions",
      extensions,
      "-out",
      `${name}.crt`,
    );
  }
  const file = (name: string) => path.join(dir, name);
  return {
    dir,
    ca: file("ca.crt"),
    serverCert: file("server.crt"),
    serverKey: file("server.key"),
    clientCert: file("client.crt"),
    clientKey: file("client.key"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
