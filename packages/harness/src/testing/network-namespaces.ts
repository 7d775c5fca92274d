/**
 * Real network hosts for the end-to-end tests: Linux network namespaces on one bridge, and the
 * faults a network between machines shows (packet loss, a bandwidth limit, a cut link). The
 * hub namespace holds the bridge with the first address of the subnet (the job manager runs
 * there); each worker namespace has one veth `eth0` whose peer is a port of the bridge.
 *
 * Faults live inside the namespaces (nftables tables, tc qdiscs, link states), so removing the
 * namespaces removes them too; the fault methods still undo themselves one by one, so that a
 * test can go back to a clean link. Creating namespaces needs Linux and root: {@link
 * NetworkNamespaces.create} then returns why not, for the test to skip saying so.
 */
import { execFileSync } from "node:child_process";
import { isAlive } from "./tracked-process.js";

/** One host: a network namespace with one address on the bridge. */
export interface NamespaceHost {
  /** Network namespace name. */
  readonly ns: string;
  readonly address: string;
  /** Its bridge port in the hub namespace (undefined for the hub itself, which owns the bridge). */
  readonly bridgePort: string | undefined;
  /** The device that carries its address: `br0` on the hub, `eth0` on a worker. */
  readonly device: string;
}

/** What the namespaces are called and numbered. */
export interface NetworkNamespacesOptions {
  /**
   * Prefix of the namespace names, unique to one test file (namespaces are machine-wide);
   * the process id is added, so two runs of the same file do not meet either.
   */
  readonly prefix: string;
  /** The first three octets of a /24 no other test file uses, e.g. `10.77.0`. */
  readonly subnet: string;
  /** Worker namespaces besides the hub (at least one). */
  readonly workers: number;
}

/** The nftables table a loss fault adds in a worker's namespace. */
const LOSS_TABLE = "sluice_chaos";
/** How long a link may take to report UP after it was (re)connected. */
const LINK_UP_TIMEOUT_MS = 5_000;

function run(command: string, args: readonly string[]): string {
  return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** The message of a failed command: its stderr when it wrote one. */
function failure(error: unknown): string {
  const stderr = (error as { stderr?: Buffer | string }).stderr?.toString().trim();
  return stderr || (error as Error).message;
}

/** The namespaces of one test file, their bridge, and the faults applied to their links. */
export class NetworkNamespaces {
  /** The namespace with the bridge (and the first address). */
  readonly hub: NamespaceHost;
  readonly workers: readonly NamespaceHost[];

  private constructor(
    private readonly options: NetworkNamespacesOptions,
    tag: string,
  ) {
    const { subnet, workers } = options;
    this.hub = { ns: `${tag}-hub`, address: `${subnet}.1`, bridgePort: undefined, device: "br0" };
    // Interface names are per namespace: the ports only need to differ inside the hub.
    this.workers = Array.from({ length: workers }, (_, i) => ({
      ns: `${tag}-w${i + 1}`,
      address: `${subnet}.${i + 2}`,
      bridgePort: `port${i + 1}`,
      device: "eth0",
    }));
  }

  /** Every host, the hub first. */
  get hosts(): readonly NamespaceHost[] {
    return [this.hub, ...this.workers];
  }

  /**
   * Builds the namespaces and the bridge; returns them, or why they cannot be built (not
   * Linux, not root, a command that failed) with nothing left behind.
   */
  static create(options: NetworkNamespacesOptions): NetworkNamespaces | string {
    if (process.platform !== "linux")
      return `network namespaces need Linux, this is ${process.platform}`;
    if (process.getuid?.() !== 0) return "creating network namespaces needs root";
    if (options.workers < 1) throw new RangeError("at least one worker namespace is needed");
    removeOrphans(options.prefix);
    const namespaces = new NetworkNamespaces(options, `${options.prefix}-${process.pid}`);
    try {
      namespaces.build();
      return namespaces;
    } catch (error) {
      namespaces.remove();
      return `cannot build the network namespaces: ${failure(error)}`;
    }
  }

  private build(): void {
    const { hub } = this;
    for (const host of this.hosts) {
      run("ip", ["netns", "add", host.ns]);
      this.exec(host, "ip", "link", "set", "lo", "up");
    }
    // The bridge (a switch) sits in the hub namespace, with the hub's address.
    this.exec(hub, "ip", "link", "add", "br0", "type", "bridge");
    this.exec(hub, "ip", "addr", "add", `${hub.address}/24`, "dev", "br0");
    this.exec(hub, "ip", "link", "set", "br0", "up");
    for (const worker of this.workers) {
      const port = worker.bridgePort as string;
      this.exec(
        hub,
        "ip",
        "link",
        "add",
        port,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        worker.ns,
      );
      this.exec(hub, "ip", "link", "set", port, "master", "br0");
      this.exec(hub, "ip", "link", "set", port, "up");
      this.exec(worker, "ip", "addr", "add", `${worker.address}/24`, "dev", "eth0");
      this.exec(worker, "ip", "link", "set", "eth0", "up");
    }
    // Wire-sized packets: a veth otherwise hands TCP segments of up to 64 KiB (GSO) to the
    // other end in one piece, so a "10% loss" would drop a tenth of the super-packets, far
    // fewer than a tenth of what a real link carries. One segment per packet, like a NIC.
    this.exec(hub, "ip", "link", "set", "dev", "br0", "gso_max_segs", "1");
    for (const worker of this.workers) {
      this.exec(worker, "ip", "link", "set", "dev", "eth0", "gso_max_segs", "1");
      this.exec(hub, "ip", "link", "set", "dev", worker.bridgePort as string, "gso_max_segs", "1");
    }
    for (const worker of this.workers) this.waitUntilUp(worker);
  }

  /** A veth reports UP once both ends are up; until then packets would be dropped. */
  private waitUntilUp(worker: NamespaceHost): void {
    const deadline = Date.now() + LINK_UP_TIMEOUT_MS;
    while (!/\bUP\b/.test(run("ip", ["-n", worker.ns, "-br", "link", "show", "eth0"]))) {
      if (Date.now() > deadline) throw new Error(`eth0 in ${worker.ns} did not come up`);
      execFileSync("sleep", ["0.05"]);
    }
  }

  /** Runs `command` in `host`'s namespace; returns its stdout. */
  exec(host: NamespaceHost, ...command: string[]): string {
    return run("ip", ["netns", "exec", host.ns, ...command]);
  }

  /** The command prefix that runs a process in `host`'s namespace. */
  prefix(host: NamespaceHost): readonly string[] {
    return ["ip", "netns", "exec", host.ns];
  }

  /** Established TCP connections in `host`'s namespace, as `local peer users` lines. */
  connections(host: NamespaceHost): string[] {
    return this.exec(host, "ss", "-Htnp", "state", "established")
      .split("\n")
      .filter((line) => line.trim() !== "");
  }

  /** True when a TCP socket listens on `host`'s address and `port` (a server came up there). */
  listening(host: NamespaceHost, port: number): boolean {
    return this.exec(host, "ss", "-Hltn", "src", `${host.address}:${port}`).trim() !== "";
  }

  /**
   * GETs `url` from inside `host`'s namespace (a short-lived node process there, since this
   * process's network stack has no route to the namespaces) and returns its JSON body, or
   * undefined when it cannot be fetched or does not answer 200.
   */
  getJson(host: NamespaceHost, url: string): unknown {
    const script = `fetch(${JSON.stringify(url)}).then(async (r) => { if (!r.ok) process.exit(1); process.stdout.write(await r.text()); }, () => process.exit(1));`;
    try {
      return JSON.parse(this.exec(host, process.execPath, "-e", script));
    } catch {
      return undefined;
    }
  }

  /**
   * Drops `percent` % of the packets `worker` receives and, independently, of those it sends
   * (nftables `numgen random`), as a lossy link would.
   */
  applyLoss(worker: NamespaceHost, percent: number): void {
    if (!Number.isInteger(percent) || percent < 0 || percent > 100)
      throw new RangeError(`a loss is a whole percentage 0..100, got ${percent}`);
    const script = [
      `table inet ${LOSS_TABLE} {`,
      "  chain in {",
      "    type filter hook input priority 0; policy accept;",
      `    numgen random mod 100 < ${percent} counter drop`,
      "  }",
      "  chain out {",
      "    type filter hook output priority 0; policy accept;",
      `    numgen random mod 100 < ${percent} counter drop`,
      "  }",
      "}",
    ].join("\n");
    execFileSync("ip", ["netns", "exec", worker.ns, "nft", "-f", "-"], {
      input: script,
      stdio: ["pipe", "pipe", "pipe"],
    });
  }

  /** Packets a loss on `worker` dropped so far, both ways (proof that the fault acted). */
  droppedPackets(worker: NamespaceHost): number {
    const table = this.exec(worker, "nft", "list", "table", "inet", LOSS_TABLE);
    let dropped = 0;
    for (const match of table.matchAll(/counter packets (\d+)/g)) dropped += Number(match[1]);
    return dropped;
  }

  /** Removes a loss applied to `worker`. */
  removeLoss(worker: NamespaceHost): void {
    this.exec(worker, "nft", "delete", "table", "inet", LOSS_TABLE);
  }

  /** The nftables tables in `host`'s namespace (for checks that a fault was undone). */
  nftTables(host: NamespaceHost): string {
    return this.exec(host, "nft", "list", "tables");
  }

  /**
   * Limits `worker`'s link to `rate` (tc's syntax, e.g. `20mbit`) in both directions: a token
   * bucket (tbf) on its `eth0` for what it sends and on its bridge port for what it receives.
   */
  applyRateLimit(worker: NamespaceHost, rate: string): void {
    // A burst of about a millisecond at the rate and a queue of 50 ms: a short queue, as on a
    // real link, instead of one that hides the limit behind buffering.
    const tbf = ["tbf", "rate", rate, "burst", "32kbit", "latency", "50ms"];
    this.exec(worker, "tc", "qdisc", "replace", "dev", "eth0", "root", ...tbf);
    this.exec(
      this.hub,
      "tc",
      "qdisc",
      "replace",
      "dev",
      worker.bridgePort as string,
      "root",
      ...tbf,
    );
  }

  /**
   * What the rate limit on `worker` has done so far, both ends: bytes sent through it, and how
   * often a packet had to wait for tokens (`overlimits`, proof that the limit acted).
   */
  rateLimitStats(worker: NamespaceHost): { sentBytes: number; overlimits: number } {
    const stats =
      this.exec(worker, "tc", "-s", "qdisc", "show", "dev", "eth0") +
      this.exec(this.hub, "tc", "-s", "qdisc", "show", "dev", worker.bridgePort as string);
    let sentBytes = 0;
    let overlimits = 0;
    for (const match of stats.matchAll(
      /Sent (\d+) bytes \d+ pkt \(dropped \d+, overlimits (\d+)/g,
    )) {
      sentBytes += Number(match[1]);
      overlimits += Number(match[2]);
    }
    return { sentBytes, overlimits };
  }

  /** Removes a rate limit applied to `worker`. */
  removeRateLimit(worker: NamespaceHost): void {
    this.exec(worker, "tc", "qdisc", "del", "dev", "eth0", "root");
    this.exec(this.hub, "tc", "qdisc", "del", "dev", worker.bridgePort as string, "root");
  }

  /** The root qdiscs of `worker`'s link, both ends (for checks that a limit was undone). */
  qdiscs(worker: NamespaceHost): string {
    return (
      this.exec(worker, "tc", "qdisc", "show", "dev", "eth0") +
      this.exec(this.hub, "tc", "qdisc", "show", "dev", worker.bridgePort as string)
    );
  }

  /**
   * Unplugs `worker`'s cable: its bridge port goes down, so nothing it sends arrives and
   * nothing reaches it, and no FIN or RST is sent either.
   */
  cut(worker: NamespaceHost): void {
    this.exec(this.hub, "ip", "link", "set", worker.bridgePort as string, "down");
  }

  /** Plugs `worker`'s cable back in and waits until its link reports UP again. */
  reconnect(worker: NamespaceHost): void {
    this.exec(this.hub, "ip", "link", "set", worker.bridgePort as string, "up");
    this.waitUntilUp(worker);
  }

  /** Removes every namespace (and with them their links, tables and qdiscs). */
  remove(): void {
    for (const host of this.hosts) {
      try {
        run("ip", ["netns", "del", host.ns]);
      } catch {
        // Not created (the set-up failed early): nothing to remove.
      }
    }
  }

  /** The namespaces of this set that still exist (empty once removed). */
  remaining(): string[] {
    const names = new Set(this.hosts.map((h) => h.ns));
    return listNamespaces().filter((ns) => names.has(ns));
  }

  /** A picture of the topology, for the test log. */
  describe(): string {
    return [
      `network topology (${this.hosts.length} namespaces on one bridge, ${this.options.subnet}.0/24):`,
      `  ${this.hub.ns}  br0 ${this.hub.address}/24`,
      ...this.workers.map(
        (w) => `  ${w.ns}  eth0 ${w.address}/24  (veth peer ${w.bridgePort} on br0)`,
      ),
    ].join("\n");
  }
}

function listNamespaces(): string[] {
  try {
    return run("ip", ["netns", "list"])
      .split("\n")
      .map((line) => line.split(" ")[0] as string)
      .filter((name) => name !== "");
  } catch {
    return [];
  }
}

/** Removes namespaces `prefix-<pid>-…` that a killed run of this file left behind. */
function removeOrphans(prefix: string): void {
  const pattern = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-(\\d+)-`);
  for (const ns of listNamespaces()) {
    const pid = Number(pattern.exec(ns)?.[1]);
    if (Number.isInteger(pid) && pid !== process.pid && !isAlive(pid)) {
      try {
        run("ip", ["netns", "del", ns]);
      } catch {
        // Gone meanwhile.
      }
    }
  }
}
