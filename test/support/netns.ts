import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { runToCompletion, type CliResult } from "./processes.js";

/**
 * Network namespaces joined by veth pairs, for tests whose processes must
 * meet across a real network interface rather than loopback: every member
 * gets a namespace of its own with one interface on a private /24, and
 * (with `root: true`) the test's own namespace gets an address on it too, so
 * the test can reach servers listening there.
 *
 * The members' veths meet on a bridge in a namespace of its own (the hub),
 * not in the root namespace: no bridge appears on the host, and the host's
 * firewall (br_netfilter sends bridged frames through the iptables of the
 * bridge's namespace) never sees the traffic. Deleting the hub deletes every
 * veth end in it, which deletes their peers, the root's end among them: one
 * `ip netns del` per namespace undoes everything.
 *
 * Names carry the test process's pid (`llmgw-<pid>-<n>-<member>`,
 * `lg<pid>-<n>` for the root's veth), so parallel test files never collide
 * and a crashed run's leftovers are known by a pid that no longer runs.
 */

/** Set by CI, where a skip would leave the feature untested while the run reads green. */
const requiredVariable = "LLMGW_TEST_NETNS";

function ip(args: readonly string[]): { ok: boolean; stdout: string; stderr: string } {
  const result = spawnSync("ip", args, { encoding: "utf8" });
  return { ok: result.status === 0, stdout: result.stdout, stderr: result.error ? result.error.message : result.stderr };
}

function ipOrThrow(args: readonly string[]): string {
  const result = ip(args);
  if (!result.ok) throw new Error(`ip ${args.join(" ")} failed: ${result.stderr.trim()}`);
  return result.stdout;
}

let availability: string | undefined | null = null;

/**
 * Why these tests cannot run here (not root, no `ip`, no permission to make a
 * namespace), or undefined when they can. With LLMGW_TEST_NETNS=required (CI)
 * a reason is an error instead: CI must run them, not skip them.
 */
export function netnsUnavailable(): string | undefined {
  if (availability === null) availability = probe();
  if (availability !== undefined && process.env[requiredVariable] === "required") {
    throw new Error(`${requiredVariable}=required, but network namespace tests cannot run here: ${availability}`);
  }
  return availability;
}

function probe(): string | undefined {
  if (process.getuid?.() !== 0) return "they need root to make network namespaces (run as root, as CI does)";
  const name = `llmgw-${process.pid}-probe`;
  const added = ip(["netns", "add", name]);
  if (!added.ok) return `\`ip netns add\` failed (${added.stderr.trim() || "no output"}): install iproute2, and run where namespaces may be made`;
  const bridge = ip(["-n", name, "link", "add", "probe0", "type", "bridge"]);
  ip(["netns", "del", name]);
  if (!bridge.ok) return `cannot make a bridge in a namespace (${bridge.stderr.trim()})`;
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function killAndDelete(namespace: string): void {
  for (const pid of ip(["netns", "pids", namespace]).stdout.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // Gone already.
    }
  }
  ip(["netns", "del", namespace]);
}

/** Removes namespaces and root veths of earlier runs whose process is gone (a crash skips afterAll). */
export function removeLeftovers(): void {
  for (const line of ip(["netns", "list"]).stdout.split("\n")) {
    const match = /^(llmgw-(\d+)-\S+)/.exec(line);
    if (match && !alive(Number(match[2]))) killAndDelete(match[1] as string);
  }
  const links = JSON.parse(ip(["-j", "link", "show", "type", "veth"]).stdout || "[]") as { ifname: string }[];
  for (const { ifname } of links) {
    const match = /^lg(\d+)-\d+$/.exec(ifname);
    if (match && !alive(Number(match[1]))) ip(["link", "del", ifname]);
  }
}

/** IPv4 routes in the root namespace, as [network, prefix length]. */
function rootRoutes(): [number, number][] {
  const routes = JSON.parse(ip(["-j", "-4", "route", "show", "table", "all"]).stdout || "[]") as { dst?: string }[];
  return routes.flatMap(({ dst }) => {
    if (dst === undefined || dst === "default") return [];
    const [address, length] = dst.split("/");
    const parts = (address ?? "").split(".").map(Number);
    if (parts.length !== 4 || parts.some((part) => !Number.isInteger(part))) return [];
    return [[parts.reduce((sum, part) => sum * 256 + part, 0), length === undefined ? 32 : Number(length)]];
  });
}

/** A random 10.x.y.0/24 that overlaps no route here, so the root's address on it shadows nothing of the host's. */
function pickSubnet(): string {
  const routes = rootRoutes();
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const second = 64 + Math.floor(Math.random() * 190);
    const third = Math.floor(Math.random() * 256);
    const start = ((10 * 256 + second) * 256 + third) * 256;
    const overlaps = routes.some(([network, length]) => {
      const shorter = Math.min(length, 24);
      const size = 2 ** (32 - shorter);
      return Math.floor(network / size) === Math.floor(start / size);
    });
    if (!overlaps) return `10.${second}.${third}`;
  }
  throw new Error("no free 10.x.y.0/24 found among the host's routes for the test network");
}

export interface NamespaceNetwork {
  /** The /24 every address is on, as "10.x.y.0/24". */
  readonly subnet: string;
  /** The test's own address on the subnet (with `root: true`). */
  readonly rootAddress: string | undefined;
  /** The name of each member's interface on the subnet (the same in every member). */
  readonly interfaceName: string;
  namespace(member: string): string;
  address(member: string): string;
  /** Runs ARGV to completion inside MEMBER's namespace. */
  runIn(member: string, argv: readonly string[], options?: { env?: Record<string, string | undefined>; withinMs?: number }): Promise<CliResult>;
  /** Starts ARGV inside MEMBER's namespace; `ip netns exec` execs it, so the child's pid is the program's own. Killed at teardown. */
  spawnIn(member: string, argv: readonly string[], options?: { env?: Record<string, string | undefined>; cwd?: string }): ChildProcess;
  /** Kills what spawnIn started and deletes every namespace (and so every veth). Safe to call twice. */
  teardown(): void;
}

let networksMade = 0;

/**
 * Makes a namespace per member, each with `lo` up and one veth (named
 * `interfaceName`, default fab0) on a fresh private /24, all bridged in a hub
 * namespace; `root: true` adds the test's own veth at .1. Members get .11,
 * .12, … in the order given. Clears an earlier crashed run's leftovers first.
 */
export function createNetwork(options: { members: readonly string[]; interfaceName?: string; root?: boolean }): NamespaceNetwork {
  removeLeftovers();
  const index = (networksMade += 1);
  const prefix = `llmgw-${process.pid}-${index}`;
  const hub = `${prefix}-hub`;
  const interfaceName = options.interfaceName ?? "fab0";
  const base = pickSubnet();
  const namespaces = new Map(options.members.map((member) => [member, `${prefix}-${member}`]));
  const addresses = new Map(options.members.map((member, position) => [member, `${base}.${11 + position}`]));
  const children: ChildProcess[] = [];
  const made: string[] = [];
  const rootEnd = `lg${process.pid}-${index}`;
  let rootEndMade = false;
  let tornDown = false;

  const teardown = () => {
    if (tornDown) return;
    tornDown = true;
    process.off("exit", teardown);
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    for (const namespace of made.reverse()) killAndDelete(namespace);
    // The kernel frees a deleted namespace (and the veth peers in it) later, in the background: the root's end goes now.
    if (rootEndMade) ip(["link", "del", rootEnd]);
  };
  // A test run that ends without its afterAll (an uncaught error, vitest's own exit) still removes its namespaces.
  process.once("exit", teardown);

  try {
    for (const namespace of [hub, ...namespaces.values()]) {
      ipOrThrow(["netns", "add", namespace]);
      made.push(namespace);
      ipOrThrow(["-n", namespace, "link", "set", "lo", "up"]);
    }
    ipOrThrow(["-n", hub, "link", "add", "br0", "type", "bridge"]);
    ipOrThrow(["-n", hub, "link", "set", "br0", "up"]);
    const plug = (hubEnd: string) => {
      ipOrThrow(["-n", hub, "link", "set", hubEnd, "master", "br0"]);
      ipOrThrow(["-n", hub, "link", "set", hubEnd, "up"]);
    };
    for (const [member, namespace] of namespaces) {
      const hubEnd = `to-${member}`.slice(0, 15);
      ipOrThrow(["link", "add", interfaceName, "netns", namespace, "type", "veth", "peer", "name", hubEnd, "netns", hub]);
      plug(hubEnd);
      ipOrThrow(["-n", namespace, "addr", "add", `${addresses.get(member) as string}/24`, "dev", interfaceName]);
      ipOrThrow(["-n", namespace, "link", "set", interfaceName, "up"]);
    }
    let rootAddress: string | undefined;
    if (options.root === true) {
      rootAddress = `${base}.1`;
      ipOrThrow(["link", "add", rootEnd, "type", "veth", "peer", "name", "to-root", "netns", hub]);
      rootEndMade = true;
      plug("to-root");
      ipOrThrow(["addr", "add", `${rootAddress}/24`, "dev", rootEnd]);
      ipOrThrow(["link", "set", rootEnd, "up"]);
    }

    const namespaceOf = (member: string) => {
      const namespace = namespaces.get(member);
      if (namespace === undefined) throw new Error(`no member ${member} in this network (members: ${options.members.join(", ")})`);
      return namespace;
    };
    return {
      subnet: `${base}.0/24`,
      rootAddress,
      interfaceName,
      namespace: namespaceOf,
      address: (member) => {
        namespaceOf(member);
        return addresses.get(member) as string;
      },
      runIn: (member, argv, runOptions = {}) =>
        runToCompletion("ip", ["netns", "exec", namespaceOf(member), ...argv], { cwd: process.cwd(), env: { ...process.env, ...runOptions.env }, withinMs: runOptions.withinMs ?? 20_000 }),
      spawnIn: (member, argv, spawnOptions = {}) => {
        const child = spawn("ip", ["netns", "exec", namespaceOf(member), ...argv], {
          cwd: spawnOptions.cwd ?? process.cwd(),
          env: { ...process.env, ...spawnOptions.env },
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.push(child);
        return child;
      },
      teardown,
    };
  } catch (error) {
    teardown();
    throw error;
  }
}
