import { Command, InvalidArgumentError, Option } from "commander";
import { describeFailure } from "./report-failure.js";
import { outliveClosedOutput } from "./closed-output.js";
import { engineNames, type EngineName } from "../catalog/light.js";
import type { AgentOptions, startAgent } from "../agent/index.js";
import { isDomainError } from "../errors/light.js";
import { addLogOptions, type LogOptions } from "./log-options.js";

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of text.split(",").map((part) => part.trim()).filter((part) => part.length > 0)) {
    const equals = pair.indexOf("=");
    if (equals <= 0) throw new InvalidArgumentError(`"${pair}" is not key=value (write --labels zone=a,rack=12)`);
    labels[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return labels;
}

function collectEnginePath(text: string, previous: Partial<Record<EngineName, string>>): Partial<Record<EngineName, string>> {
  const equals = text.indexOf("=");
  const engine = text.slice(0, Math.max(equals, 0));
  if (equals <= 0 || !(engineNames as readonly string[]).includes(engine)) {
    throw new InvalidArgumentError(`"${text}" is not ENGINE=PATH with ENGINE one of ${engineNames.join(", ")} (e.g. comfyui=/opt/ComfyUI)`);
  }
  return { ...previous, [engine]: text.slice(equals + 1) };
}

function seconds(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new InvalidArgumentError(`"${text}" is not a number of seconds greater than 0`);
  return value;
}

interface AgentCommandOptions extends LogOptions {
  server: string;
  token?: string;
  name?: string;
  fabric?: string;
  fabricAddress?: string;
  fabricInterface?: string;
  labels?: Record<string, string>;
  dataDir: string;
  listen: string;
  advertise?: string;
  engineHost?: string;
  simulate?: string;
  simulateFetch?: boolean;
  enginePath?: Partial<Record<EngineName, string>>;
  comfyuiInstall?: string;
  hfEndpoint?: string;
  startupTimeout: number;
  stopGrace: number;
  tlsCert?: string;
  tlsKey?: string;
  ca?: string;
  exitWithParent?: boolean;
}

/**
 * `llmgw agent`: one per machine. `overrides` lets a test run
 * the real command with a stand-in engine driver.
 */
/** Where an agent keeps its state when not told: in the working directory, which is why a clone's .gitignore names it. */
export const defaultAgentDataDir = "./llmgw-agent-data";

export function registerAgentCommand(program: Command, overrides: Partial<AgentOptions> = {}): Command {
  const command = program
    .command("agent")
    .description("run the node agent: join the server, report this machine's GPUs, run the replicas the server places here")
    .addOption(new Option("--server <url>", "the server to join, e.g. http://control:8080").env("LLMGW_SERVER").makeOptionMandatory())
    .addOption(
      new Option("--token <join-token>", "join token from `llmgw ctl node token` (needed once; the credential it earns is kept in --data-dir)").env(
        "LLMGW_JOIN_TOKEN",
      ),
    )
    .option("--name <name>", "node name (default: the host name)")
    .option("--fabric <fabric>", "the interconnect this node's cards share with others (default: one fabric per node, its name)")
    .addOption(
      new Option(
        "--fabric-address <ip>",
        "this node's IP address on its fabric, where the other nodes of a replica over several nodes reach it (the interface holding it is found and reported with it); a node needs it to be a member of such a replica",
      ).env("LLMGW_FABRIC_ADDRESS"),
    )
    .addOption(
      new Option("--fabric-interface <name>", "the network interface of --fabric-address, for an address this machine does not hold itself (behind NAT); default: the interface holding it").env(
        "LLMGW_FABRIC_INTERFACE",
      ),
    )
    .option("--labels <key=value,...>", "labels for placement", parseLabels)
    .option("--data-dir <dir>", "weights cache, logs and state", defaultAgentDataDir)
    .option("--listen <host:port>", "address of the agent's control API", "127.0.0.1:0")
    .option("--tls-cert <file>", "serve the control API over HTTPS with this PEM certificate (with --tls-key); a renewed file is picked up without a restart")
    .option("--tls-key <file>", "the PEM private key of --tls-cert")
    .addOption(new Option("--ca <file>", "a PEM CA certificate to trust besides the system's, for a server whose certificate a private CA signed").env("LLMGW_CA"))
    .option("--advertise <url>", "the control URL the server should call (default: from --listen)")
    .option("--engine-host <host>", "where engines listen: 127.0.0.1 (default, this machine only) or 0.0.0.0 / this node's address so gateways on other machines reach them (each engine then needs its replica key)")
    .option("--simulate <spec>", 'pretend GPUs, e.g. "4xH100-80GB@nvl0,cpu:32c/256g"; runs the simulated engine in place of every real one')
    .option("--simulate-fetch", "with --simulate, fetch weights for real instead of pretending")
    .option("--engine-path <engine=path>", "where an engine is when not on PATH (repeatable): comfyui=/opt/ComfyUI (its checkout), vllm=/opt/vllm/bin/vllm", collectEnginePath, {})
    .addOption(new Option("--hf-endpoint <url>", "Hugging Face hub or mirror for hf:// sources").env("HF_ENDPOINT").default("https://huggingface.co"))
    .option(
      "--comfyui-install <command>",
      'a shell command that installs ComfyUI into $COMFYUI_DIR (--engine-path comfyui=PATH, or DATA_DIR/ComfyUI), run when the first ComfyUI model is placed here and it is missing, e.g. "git clone https://github.com/comfyanonymous/ComfyUI \"$COMFYUI_DIR\" && pip install -r \"$COMFYUI_DIR/requirements.txt\""',
    )
    .option("--startup-timeout <seconds>", "how long an engine may take to become healthy", seconds, 1800)
    .option("--stop-grace <seconds>", "time between SIGTERM and SIGKILL when stopping an engine", seconds, 30)
    .option(
      "--exit-with-parent",
      "stop every engine and exit when stdin ends, that is when the process that started this agent is gone (kill -9 included): for agents a supervisor runs as its children, as llmgw demo does. Without it an engine outlives its agent, as it should on a real node",
    );
  return addLogOptions(command, "info")
    .action(async (options: AgentCommandOptions) => {
      // commander has read --token's LLMGW_JOIN_TOKEN into options.token. Dropped from process.env, it is
      // inherited by no child of the agent (nvidia-smi, engines, anything they start), and a later
      // dump of the environment does not show it. It does NOT leave /proc/<agent pid>/environ: Linux
      // keeps the environment the process started with there, whatever process.env becomes, and a
      // process of the same uid (an engine, code that came with a model) can read that file.
      delete process.env.LLMGW_JOIN_TOKEN;
      // A closed pipe or terminal on stderr must not cut short the stop of its engines (--exit-with-parent) or its own.
      outliveClosedOutput();
      // Loaded when run, not at the top: every `llmgw ctl` builds this command tree, and must not load the agent to do it.
      const [{ startAgent, watchParentLifeline }, { readCaFile, tlsFromFlags }, { default: pino }, { logSettings }] = await Promise.all([
        import("../agent/index.js"),
        import("../net/index.js"),
        import("pino"),
        import("../log-output.js"),
      ]);
      const { stream, ...logOptions } = logSettings(options.logLevel, options.logFormat);
      let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
      let parentGone = false;
      if (options.exitWithParent) {
        watchParentLifeline(process.stdin, () => {
          parentGone = true;
          // Still starting: nothing of this start is kept; the engines it adopted are stopped once it has them.
          if (agent) void stopEnginesAndExit(agent);
        });
      }
      try {
        agent = await startAgent({
          server: options.server,
          joinToken: options.token,
          name: options.name,
          fabric: options.fabric,
          fabricAddress: options.fabricAddress,
          fabricInterface: options.fabricInterface,
          labels: options.labels,
          dataDirectory: options.dataDir,
          listen: options.listen,
          advertise: options.advertise,
          engineHost: options.engineHost,
          simulate: options.simulate,
          simulateFetch: options.simulateFetch,
          enginePaths: options.enginePath,
          comfyuiInstall: options.comfyuiInstall,
          hubUrl: options.hfEndpoint,
          startupTimeoutMs: options.startupTimeout * 1000,
          stopGraceMs: options.stopGrace * 1000,
          tls: tlsFromFlags(options.tlsCert, options.tlsKey),
          ca: options.ca === undefined ? undefined : readCaFile(options.ca, process.env.LLMGW_CA === options.ca ? "LLMGW_CA" : "--ca"),
          logger: pino({ name: "llmgw-agent", ...logOptions }, stream),
          ...overrides,
        });
      } catch (error) {
        reportAndExit(error);
        return;
      }
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the parent's lifeline sets it while the agent starts
      if (parentGone) return void stopEnginesAndExit(agent);
      process.stderr.write(`llmgw agent ${agent.name}: control API at ${agent.url}, data in ${agent.dataDirectory}, server ${options.server}\n`);
      for (const warning of agent.warnings) process.stderr.write(`warning: ${warning}\n`);
      // Stopping the agent leaves its engines running (they are adopted by the next
      // start); stop replicas through the server to stop engines.
      const shutdown = () => void agent.close();
      process.once("SIGINT", shutdown);
      process.once("SIGTERM", shutdown);
      try {
        await agent.done;
        process.exit(0);
      } catch (error) {
        reportAndExit(error);
      }
    });
}

/** --exit-with-parent: its parent is gone, so are the engines it started (the orderly stop of each, SIGKILL after the grace). */
async function stopEnginesAndExit(agent: Awaited<ReturnType<typeof startAgent>>): Promise<void> {
  const running = agent.supervisor.list().filter((replica) => replica.state !== "stopped" && replica.state !== "failed");
  process.stderr.write(`llmgw agent ${agent.name}: the process that started it is gone (--exit-with-parent); stopping ${running.length} engine${running.length === 1 ? "" : "s"} and exiting\n`);
  for (const replica of running) {
    try {
      agent.supervisor.stop(replica.id, false);
    } catch {
      // gone meanwhile
    }
  }
  await agent.supervisor.settled();
  await agent.close().catch(() => undefined);
  process.exit(0);
}

function reportAndExit(error: unknown): void {
  if (isDomainError(error)) process.stderr.write(`${describeFailure(error)}\n`);
  else process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
