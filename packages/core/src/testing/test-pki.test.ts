import { X509Certificate } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import tls from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { createTestPki, type TestPki } from "./test-pki.js";

const created: TestPki[] = [];
afterEach(() => {
  for (const pki of created.splice(0)) pki.remove();
});

function pkiFor(label: string): TestPki {
  const pki = createTestPki(label);
  created.push(pki);
  return pki;
}

/** A TLS server on 127.0.0.1 that requires a client certificate of `ca`; answers "ok". */
async function mutualTlsServer(
  ca: string,
  identity: { key: string; cert: string },
): Promise<{ server: tls.Server; port: number }> {
  const server = tls.createServer(
    {
      key: readFileSync(identity.key),
      cert: readFileSync(identity.cert),
      ca: readFileSync(ca),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (socket) => socket.end("ok"),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Connects with Node's default checks (the authority, and the host against the certificate). */
function connect(
  port: number,
  host: string,
  ca: string,
  identity: { key: string; cert: string },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: "127.0.0.1",
      servername: host === "127.0.0.1" ? undefined : host,
      port,
      ca: readFileSync(ca),
      key: readFileSync(identity.key),
      cert: readFileSync(identity.cert),
      checkServerIdentity: (_, cert) => tls.checkServerIdentity(host, cert),
    });
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      answer += chunk;
    });
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
  });
}

describe("a throw-away certificate authority (createTestPki)", () => {
  it("issues certificates that both ends of mutual TLS on 127.0.0.1 accept, with the host checked", async () => {
    const pki = pkiFor("mutual");
    const { server, port } = await mutualTlsServer(pki.caCert, pki.issue("server"));
    try {
      await expect(connect(port, "127.0.0.1", pki.caCert, pki.issue("client"))).resolves.toBe("ok");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("names the loopback addresses and no host name, so a client that expects localhost refuses it", async () => {
    const pki = pkiFor("host");
    const { server, port } = await mutualTlsServer(pki.caCert, pki.issue("server"));
    try {
      await expect(connect(port, "localhost", pki.caCert, pki.issue("client"))).rejects.toThrow(
        "Hostname/IP does not match certificate's altnames",
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("makes an authority Go's TLS accepts as one, and certificates for server and client authentication alike", () => {
    const pki = pkiFor("extensions");
    const authority = new X509Certificate(readFileSync(pki.caCert));
    const issued = pki.issue("etcd");
    const certificate = new X509Certificate(readFileSync(issued.cert));
    expect(authority.ca).toBe(true);
    expect(authority.subject).toBe("CN=sluice-test-ca-extensions");
    expect(certificate.ca).toBe(false);
    expect(certificate.subject).toBe("CN=etcd");
    expect(certificate.checkIssued(authority)).toBe(true);
    expect(certificate.verify(authority.publicKey)).toBe(true);
    // serverAuth and clientAuth: etcd dials its own port with its server certificate.
    expect(certificate.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]);
    expect(certificate.subjectAltName).toBe("IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1");
    expect(issued.fingerprint256).toBe(certificate.fingerprint256);
  });

  it("refuses the authority's own name, which would overwrite its key, and names that are not plain file names", () => {
    const pki = pkiFor("names");
    expect(() => pki.issue("ca")).toThrow("a test certificate cannot be named 'ca'");
    expect(() => pki.issue("../escape")).toThrow("a test certificate cannot be named '../escape'");
    expect(new X509Certificate(readFileSync(pki.caCert)).ca).toBe(true);
  });

  it("deletes its folder with every key on remove, and a second remove is harmless", () => {
    const pki = createTestPki("removed");
    const issued = pki.issue("worker");
    expect(existsSync(issued.key)).toBe(true);
    pki.remove();
    pki.remove();
    expect(existsSync(pki.dir)).toBe(false);
  });
});
