import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NodeView } from "../../src/protocol/views.js";
import { SteadyLoad } from "../chaos/steady-load.js";
import { modelYaml, replicaIdentities, serverYaml, startCluster, type Cluster } from "../support/cluster.js";
import { waitFor } from "../support/fake-engine.js";
import { runCli } from "../support/processes.js";

/**
 * The agent run as its systemd unit runs it: the ExecStart line `llmgw
 * service install agent` writes, with the variables of its EnvironmentFile,
 * stopped the way KillMode=process stops it (SIGTERM to the main process
 * only), started again, and then replaced by another release of the package
 * on the same data directory, all under a steady load through the gateway.
 * The engines must never notice: same replica ids, same pids, no failed
 * request. (No systemd runs in this sandbox; what systemd itself adds, the
 * cgroup and the journal, is checked by `systemd-analyze verify` in
 * service-install.test.ts.)
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const phase = 20;

/** ExecStart='s words, as systemd splits them: spaces, double quotes with backslash escapes. */
export function splitExecStart(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)) words.push(match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1").replace(/\$\$/g, "$").replace(/%%/g, "%") : (match[2] as string));
  return words;
}

/** KEY=VALUE lines of an environment file; comments and blank lines skipped. */
function readEnvironmentFile(file: string): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (match) variables[match[1] as string] = match[2] as string;
  }
  return variables;
}

function unitSetting(unit: string, key: string): string[] {
  return unit
    .split("\n")
    .filter((line) => line.startsWith(`${key}=`))
    .map((line) => line.slice(key.length + 1));
}

/**
 * A second copy of the built package with another version in its
 * package.json: what a user has after installing the next release's tarball
 * (its dependencies are the same, so they are linked rather than copied). The
 * build is the same code, which is the point: the test checks that replacing
 * the agent's program, not what a later release changes, leaves engines be.
 */
function packageCopy(directory: string, version: string): string {
  const copy = path.join(directory, `llmgw-${version}`);
  mkdirSync(path.join(copy, "dist"), { recursive: true });
  cpSync(path.join(root, "bin"), path.join(copy, "bin"), { recursive: true });
  cpSync(path.join(root, "dist", "src"), path.join(copy, "dist", "src"), { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string };
  writeFileSync(path.join(copy, "package.json"), JSON.stringify({ ...manifest, version }, null, 2));
  symlinkSync(path.join(root, "node_modules"), path.join(copy, "node_modules"));
  return copy;
}

describe("the agent's unit, restarted and upgraded under load", () => {
  let cluster: Cluster;
  let unit: string;
  let environment: Record<string, string>;
  let agent: ChildProcess | undefined;

  const startAsSystemd = (argv: readonly string[]): ChildProcess => {
    // Its own process group stands for the unit's cgroup; the environment is the unit's, nothing inherited.
    const child = spawn(argv[0] as string, argv.slice(1), {
      detached: true,
      stdio: ["ignore", "ignore", "ignore"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: unitSetting(unit, "Environment").find((line) => line.startsWith("HOME="))?.slice(5), ...environment },
    });
    agent = child;
    return child;
  };

  /** What KillMode=process does on `systemctl stop`/`restart`: SIGTERM to the main process, nothing else in the unit. */
  const stopAsSystemd = async (child: ChildProcess): Promise<number | null> => {
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    process.kill(child.pid as number, "SIGTERM");
    return await exited;
  };

  const node = async () => (await cluster.api<{ nodes: NodeView[] }>("GET", "/api/v1/nodes")).nodes.find((candidate) => candidate.name === "node-a");

  /** The agent is back: a heartbeat after `since`, reporting the replica it adopted. */
  const heardAgain = async (since: number) =>
    await waitFor(async () => {
      const view = await node();
      const adopted = (await cluster.replicas("chat")).filter((replica) => replica.adopted && replica.state === "ready");
      return view !== undefined && view.state === "ready" && Date.parse(view.last_seen_at) > since && adopted.length === 1 ? view : undefined;
    }, 60_000, "the agent to be heard again with its adopted engine");

  beforeAll(async () => {
    // A restart on a busy two-core machine may take longer than the short pacing's 4 s: the node must not be lost meanwhile.
    cluster = await startCluster("llmgw-agent-unit-", [], {}, serverYaml.replace("heartbeat_deadline: 4s", "heartbeat_deadline: 20s"));
    const envFile = path.join(cluster.directory, "agent.env");
    writeFileSync(envFile, `# the agent's secrets\nLLMGW_SERVER=${cluster.server.url}\nLLMGW_JOIN_TOKEN=${cluster.joinToken}\n`, { mode: 0o600 });
    const printed = await runCli(["service", "install", "agent", "--print", "--environment-file", envFile, "--data-dir", path.join(cluster.directory, "agent-data"), "--", "--name", "node-a", "--simulate", "2xH100-80GB@nvl0,cpu:16c/64g"]);
    expect(printed.stderr).toBe("");
    unit = printed.stdout;
    environment = readEnvironmentFile(unitSetting(unit, "EnvironmentFile")[0] as string);
    expect(unitSetting(unit, "KillMode")).toEqual(["process"]);
    startAsSystemd(splitExecStart(unitSetting(unit, "ExecStart")[0] as string));
    await waitFor(async () => (await node())?.state === "ready", 30_000, "node-a to join");
    await cluster.addModel("chat", modelYaml("chat", "scaling: { min: 1, max: 1 }\n"), "--wait");
    await cluster.readyReplicas("chat", 1);
  }, 120_000);

  afterAll(async () => {
    if (agent?.exitCode === null) await stopAsSystemd(agent);
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  it("restarts the unit's main process only: the engine keeps its pid and serves every request meanwhile", async () => {
    const before = replicaIdentities(await cluster.readyReplicas("chat", 1));
    const load = new SteadyLoad({ baseURL: `${cluster.server.url}/v1`, model: "chat", concurrency: 3, maxTokens: 24 });
    try {
      await load.until(() => load.succeeded >= phase, `${phase} answers before the restart`);
      expect(await stopAsSystemd(agent as ChildProcess)).toBe(0);
      const stoppedAt = Date.now();
      startAsSystemd(splitExecStart(unitSetting(unit, "ExecStart")[0] as string));
      await heardAgain(stoppedAt);
      const back = Date.now();
      await load.until(() => load.succeededSince(back) >= phase, `${phase} answers after the restart`);
    } finally {
      const result = await load.stop();
      expect(result.failures.total, JSON.stringify(result.failures)).toBe(0);
    }
    expect(replicaIdentities(await cluster.readyReplicas("chat", 1))).toEqual(before);
  });

  it("upgrades the agent's program on the same data directory: no replica restarts, no request fails, the node reports the new release", async () => {
    const before = replicaIdentities(await cluster.readyReplicas("chat", 1));
    const oldVersion = (await node())?.agent_version;
    expect(oldVersion).toBe((JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }).version);
    const next = packageCopy(cluster.directory, "99.0.0-next");
    const argv = splitExecStart(unitSetting(unit, "ExecStart")[0] as string).map((word) => (word === path.join(root, "bin", "llmgw.js") ? path.join(next, "bin", "llmgw.js") : word));
    expect(argv).toContain(path.join(next, "bin", "llmgw.js"));

    const load = new SteadyLoad({ baseURL: `${cluster.server.url}/v1`, model: "chat", concurrency: 3, maxTokens: 24 });
    try {
      await load.until(() => load.succeeded >= phase, `${phase} answers before the upgrade`);
      expect(await stopAsSystemd(agent as ChildProcess)).toBe(0);
      const stoppedAt = Date.now();
      startAsSystemd(argv);
      const upgraded = await heardAgain(stoppedAt);
      await waitFor(async () => (await node())?.agent_version === "99.0.0-next", 30_000, `the node to report the new release (it reports ${upgraded.agent_version})`);
      const back = Date.now();
      await load.until(() => load.succeededSince(back) >= phase, `${phase} answers after the upgrade`);
    } finally {
      const result = await load.stop();
      expect(result.failures.total, JSON.stringify(result.failures)).toBe(0);
    }
    expect(replicaIdentities(await cluster.readyReplicas("chat", 1))).toEqual(before);
    const nodes = await runCli(["ctl", "--server", cluster.server.url, "--token", cluster.server.token, "nodes"]);
    expect(nodes.stdout).toContain("agent 99.0.0-next");
  });
});
