import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";

/** A free TCP port on this machine, as the kernel hands one out. */
export async function findFreePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** Linux's default range for ports the kernel hands out on its own, when /proc does not say. */
const defaultEphemeralPorts = { low: 32768, high: 60999 };
/** The lowest port an engine is given: below it sit the well-known and registered services people run. */
const lowestEnginePort = 10000;

/**
 * The ports at or above lowestEnginePort that the Fetch standard refuses to
 * connect to (its "bad ports"): node's fetch, the official OpenAI client and
 * browsers fail on them with "bad port" before sending a byte. An end-to-end
 * test that reached a simulated engine given 10080 failed that way.
 */
const fetchBlockedPorts: ReadonlySet<number> = new Set([10080]);

/** The range the kernel takes ports from by itself: for port-0 listeners and for every outgoing connection. */
export function ephemeralPortRange(text?: string): { low: number; high: number } {
  try {
    const [low, high] = (text ?? readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")).trim().split(/\s+/).map(Number);
    if (low !== undefined && high !== undefined && Number.isInteger(low) && Number.isInteger(high) && low > 0 && low <= high && high < 65536) return { low, high };
  } catch {
    // Not Linux, or /proc is not mounted: the usual range.
  }
  return defaultEphemeralPorts;
}

/**
 * A port for an engine to listen on, free now and outside the kernel's own
 * range. A port the kernel handed out for a port-0 listener and then freed
 * goes back to that range, and any outgoing connection on the machine may
 * take it as its source port before the engine binds it: on a busy machine
 * an engine failed to start with EADDRINUSE that way. Below the range, only
 * a program that binds a port by its number can take it. Where the kernel's
 * range leaves too little room below it, the kernel picks as before.
 * `avoid` holds ports promised to something that has not bound them yet (a
 * gang leader's rendezvous port, reserved while its weights download).
 */
export async function findEnginePort(random: () => number = Math.random, range = ephemeralPortRange(), avoid: ReadonlySet<number> = new Set()): Promise<number> {
  const high = range.low - 1;
  if (high - lowestEnginePort >= 1000) {
    for (let attempt = 0; attempt < 32; attempt += 1) {
      const port = lowestEnginePort + Math.floor(random() * (high - lowestEnginePort + 1));
      if (!fetchBlockedPorts.has(port) && !avoid.has(port) && (await isPortFree(port))) return port;
    }
  }
  for (;;) {
    const port = await findFreePort();
    if (!avoid.has(port)) return port;
  }
}

/**
 * Whether nothing listens on the port. Binding the wildcard address fails
 * when any address holds the port, so an engine bound to 127.0.0.1 and one
 * bound to 0.0.0.0 are both found.
 */
export async function isPortFree(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "0.0.0.0", exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export interface ProcessStat {
  readonly pid: number;
  readonly state: string;
  readonly processGroup: number;
  /** Clock ticks after boot when the process started: with the pid, it names one process for good. */
  readonly startTicks: string;
}

export async function readProcessStat(pid: number): Promise<ProcessStat | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses; the fields after its last ')' are fixed.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const processGroup = fields[2];
  const startTicks = fields[19];
  if (state === undefined || processGroup === undefined || startTicks === undefined) return undefined;
  return { pid, state, processGroup: Number(processGroup), startTicks };
}

/** Every live (not zombie) process this agent can see, read from /proc; undefined where there is no /proc. */
export async function listProcesses(): Promise<ProcessStat[] | undefined> {
  if (!(await hasProc())) return undefined;
  const pids = (await readdir("/proc")).filter((entry) => /^\d+$/.test(entry)).map(Number);
  // Read side by side: one at a time took 50-200 ms for 150 processes, and a stop polls this.
  const stats = await Promise.all(pids.map((pid) => readProcessStat(pid)));
  return stats.filter((stat): stat is ProcessStat => stat !== undefined && stat.state !== "Z");
}

/**
 * A process's starting environment, from /proc/PID/environ. Readable only for
 * this user's processes, which are the only ones the agent starts; undefined
 * for any other (or a process gone meanwhile).
 */
export async function readProcessEnvironment(pid: number): Promise<Record<string, string> | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/environ`, "utf8");
  } catch {
    return undefined;
  }
  const environment: Record<string, string> = {};
  for (const entry of text.split("\0")) {
    const equals = entry.indexOf("=");
    if (equals > 0) environment[entry.slice(0, equals)] = entry.slice(equals + 1);
  }
  return environment;
}

const hasProc = async () => (await readProcessStat(process.pid)) !== undefined;

export async function processStartTicks(pid: number): Promise<string | undefined> {
  return (await readProcessStat(pid))?.startTicks;
}

/**
 * Whether the process runs. A zombie does not count: when the agent is gone
 * and no one reaps the engine, its pid lingers dead. A pid whose start time
 * differs from the recorded one was reused by another program after the
 * engine died, and does not count either.
 */
export async function isProcessAlive(pid: number, expectedStartTicks?: string): Promise<boolean> {
  const stat = await readProcessStat(pid);
  if (stat) return stat.state !== "Z" && (expectedStartTicks === undefined || stat.startTicks === expectedStartTicks);
  if (await hasProc()) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether any live (not zombie) process is left in the group. */
export async function isProcessGroupAlive(processGroup: number): Promise<boolean> {
  if (await hasProc()) {
    for (const entry of await readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = await readProcessStat(Number(entry));
      if (stat && stat.processGroup === processGroup && stat.state !== "Z") return true;
    }
    return false;
  }
  try {
    process.kill(-processGroup, 0);
    return true;
  } catch {
    return false;
  }
}

function signalGroup(processGroup: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-processGroup, signal);
  } catch {
    // ESRCH: the group is already gone, which is what a stop wants.
  }
}

/**
 * SIGTERM to the whole group (vLLM and SGLang fork a worker per card; killing
 * only the leader orphans workers that keep the cards' memory), a grace period
 * for the engine to finish and free its cards, then SIGKILL to what is left.
 * Returns whether SIGKILL was needed.
 */
export async function stopProcessGroup(processGroup: number, graceMs: number, pollMs = 100): Promise<boolean> {
  signalGroup(processGroup, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!(await isProcessGroupAlive(processGroup))) return false;
    await sleep(pollMs);
  }
  if (!(await isProcessGroupAlive(processGroup))) return false;
  signalGroup(processGroup, "SIGKILL");
  for (let attempt = 0; attempt < 50 && (await isProcessGroupAlive(processGroup)); attempt += 1) await sleep(pollMs);
  return true;
}

export interface SpawnedEngine {
  readonly pid: number;
  /** The engine leads its own group: pid and group id are the same. */
  readonly processGroup: number;
  /** Resolves when the process exits, while this agent process is its parent. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts an engine so that it outlives the agent: detached (its own session
 * and process group, so a signal to the agent's group or the agent's death
 * does not reach it), stdin closed, stdout and stderr appended to its log file
 * rather than piped (a pipe would break when the agent exits).
 */
export async function spawnEngine(argv: readonly string[], env: NodeJS.ProcessEnv, logPath: string, cwd?: string): Promise<SpawnedEngine> {
  const [program, ...args] = argv;
  if (program === undefined) throw new Error("engine command line is empty");
  // Engines print what they load and sometimes the tokens they were given: readable by the agent's user only.
  const logDescriptor = openSync(logPath, "a", 0o600);
  try {
    const child = spawn(program, args, { detached: true, stdio: ["ignore", logDescriptor, logDescriptor], env, ...(cwd ? { cwd } : {}) });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", reject);
    });
    child.unref();
    const pid = child.pid;
    if (pid === undefined) throw new Error(`no pid for ${program}`);
    return { pid, processGroup: pid, exited };
  } finally {
    closeSync(logDescriptor);
  }
}

/** One health probe; any answer but 200, or none within the timeout, is not healthy. */
export async function probeHealth(url: string, timeoutMs = 3000): Promise<boolean> {
  try {
    const response = await request(url, { method: "GET", headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs) });
    await response.body.dump();
    return response.statusCode === 200;
  } catch {
    return false;
  }
}
