import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigurationError, ErrorCodes } from "@sluice/core";
import { createTestPki, type TestCertificate, type TestPki } from "@sluice/core/test-certificates";
import { expectError } from "@sluice/core/testing";
import { readableConfigOf } from "@sluice/runtime-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEtcdClientOptions } from "./read-etcd-client-options.js";

let pki: TestPki;
/** A job manager's client certificate, and another one whose key does not fit it. */
let client: TestCertificate;
let other: TestCertificate;
beforeAll(() => {
  pki = createTestPki("etcd-client-options");
  client = pki.issue("job-manager");
  other = pki.issue("other");
});
afterAll(() => pki?.remove());

const HTTPS = "https://10.0.0.1:2379,https://10.0.0.2:2379";

/** readEtcdClientOptions of the keys given, on https:// endpoints unless they say otherwise. */
function read(keys: Record<string, string>) {
  return readEtcdClientOptions(
    readableConfigOf({ "high-availability.etcd.endpoints": HTTPS, ...keys }),
  );
}

function file(name: string, content: string | Buffer): string {
  const written = path.join(pki.dir, name);
  writeFileSync(written, content);
  return written;
}

describe("the etcd client's options read from high-availability.etcd.*", () => {
  it("reads the PEM files of https:// endpoints into the client's TLS options, and the user", () => {
    const settings = read({
      "high-availability.etcd.ssl.ca": pki.caCert,
      "high-availability.etcd.ssl.cert": client.cert,
      "high-availability.etcd.ssl.key": client.key,
      "high-availability.etcd.username": "sluice",
      "high-availability.etcd.password": "secret",
      "high-availability.etcd.lease-ttl": "5s",
    });
    expect(settings.options).toEqual({
      endpoints: ["https://10.0.0.1:2379", "https://10.0.0.2:2379"],
      requestTimeoutMs: 5000,
      tls: {
        ca: readFileSync(pki.caCert),
        cert: readFileSync(client.cert),
        key: readFileSync(client.key),
      },
      auth: { username: "sluice", password: "secret" },
    });
    expect(settings.secure).toBe(true);
    expect(settings.warnings).toEqual([]);
    // Without the files, Node's own roots verify etcd.
    expect(read({}).options.tls).toEqual({});
  });

  it("names the key and the path of a CA file that is missing, unreadable, or holds no certificate", () => {
    const missing = path.join(pki.dir, "missing.crt");
    expectError(
      () => read({ "high-availability.etcd.ssl.ca": missing }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      `high-availability.etcd.ssl.ca = "${missing}": cannot read the file (ENOENT`,
    );
    expectError(
      () => read({ "high-availability.etcd.ssl.ca": pki.dir }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      `high-availability.etcd.ssl.ca = "${pki.dir}": cannot read the file (EISDIR`,
    );
    // Node would take it and then trust nothing.
    expectError(
      () => read({ "high-availability.etcd.ssl.ca": client.key }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      `high-availability.etcd.ssl.ca = "${client.key}": the file holds no PEM certificate`,
    );
    const damaged = file(
      "damaged.crt",
      "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n",
    );
    expectError(
      () => read({ "high-availability.etcd.ssl.ca": damaged }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      `high-availability.etcd.ssl.ca = "${damaged}": certificate 1 of the file cannot be read`,
    );
  });

  it("names both keys when only the client certificate or only its key is set", () => {
    expectError(
      () => read({ "high-availability.etcd.ssl.cert": client.cert }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      "high-availability.etcd.ssl.cert is set without high-availability.etcd.ssl.key",
    );
    expectError(
      () => read({ "high-availability.etcd.ssl.key": client.key }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      "high-availability.etcd.ssl.key is set without high-availability.etcd.ssl.cert",
    );
  });

  it("refuses a key that is not the certificate's, or encrypted with another passphrase, naming both files", () => {
    expectError(
      () =>
        read({
          "high-availability.etcd.ssl.cert": client.cert,
          "high-availability.etcd.ssl.key": other.key,
        }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      `high-availability.etcd.ssl.key = "${other.key}" cannot be used with high-availability.etcd.ssl.cert = "${client.cert}": `,
      "key values mismatch",
    );
    const encrypted = file(
      "client-encrypted.key",
      execFileSync("openssl", ["ec", "-in", client.key, "-aes256", "-passout", "pass:right"], {
        stdio: ["ignore", "pipe", "ignore"],
      }),
    );
    const keys = {
      "high-availability.etcd.ssl.cert": client.cert,
      "high-availability.etcd.ssl.key": encrypted,
    };
    expectError(
      () => read({ ...keys, "high-availability.etcd.ssl.key-password": "wrong" }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      `high-availability.etcd.ssl.key = "${encrypted}" cannot be used with high-availability.etcd.ssl.cert = "${client.cert}" and high-availability.etcd.ssl.key-password: `,
      "bad decrypt",
    );
    expect(
      read({ ...keys, "high-availability.etcd.ssl.key-password": "right" }).options.tls?.passphrase,
    ).toBe("right");
  });

  it("refuses endpoints of both schemes, naming the key", () => {
    expectError(
      () =>
        read({ "high-availability.etcd.endpoints": "https://10.0.0.1:2379,http://10.0.0.2:2379" }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      'config key "high-availability.etcd.endpoints"',
      "all http:// or all https://, not a mix",
    );
  });

  it("refuses TLS keys with http:// endpoints, which would leave them unused", () => {
    expectError(
      () =>
        read({
          "high-availability.etcd.endpoints": "http://10.0.0.1:2379",
          "high-availability.etcd.ssl.ca": pki.caCert,
          "high-availability.etcd.ssl.key-password": "x",
        }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      'high-availability.etcd.ssl.ca, high-availability.etcd.ssl.key-password are set, but high-availability.etcd.endpoints = "http://10.0.0.1:2379" reaches etcd without TLS',
    );
  });

  it("refuses a user without a password and a password without a user, and warns of a password over http://", () => {
    expectError(
      () => read({ "high-availability.etcd.username": "sluice" }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      "high-availability.etcd.username is set without high-availability.etcd.password",
    );
    expectError(
      () => read({ "high-availability.etcd.password": "secret" }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      "high-availability.etcd.password is set without high-availability.etcd.username",
    );
    const plain = read({
      "high-availability.etcd.endpoints": "http://10.0.0.1:2379",
      "high-availability.etcd.username": "sluice",
      "high-availability.etcd.password": "secret",
    });
    expect(plain.secure).toBe(false);
    expect(plain.warnings).toEqual([
      "high-availability.etcd.password is sent to etcd in the clear: high-availability.etcd.endpoints are http:// endpoints; use https://",
    ]);
  });
});
