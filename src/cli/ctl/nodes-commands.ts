import { admin } from "../../client/index.js";
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import type { NodeView, ReplicaView } from "../../protocol/index.js";
import { print, printJson, renderTable } from "../output.js";
import { wholeNumber } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";
import { printedLlmgwCommand } from "../invocation.js";
import { DomainError } from "../../errors/light.js";

const GiB = 1024 ** 3;

function gibibytes(bytes: number): string {
  return `${Math.round(bytes / GiB)} GiB`;
}

function ago(iso: string): string {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return seconds < 120 ? `${seconds}s ago` : seconds < 7200 ? `${Math.round(seconds / 60)}m ago` : `${Math.round(seconds / 3600)}h ago`;
}

/** "fetching 42%" while weights come in; the bare state otherwise. */
export function describeReplicaState(replica: Pick<ReplicaView, "state" | "progress">): string {
  if (replica.state === "fetching" && replica.progress) {
    const total = replica.progress.bytes_total;
    return total ? `fetching ${Math.floor(replica.progress.fraction * 100)}% of ${gibibytes(total)}` : "fetching";
  }
  return replica.state;
}

function cardList(text: string): number[] {
  const cards = text.split(",").map((part) => part.trim());
  if (cards.some((card) => !/^\d+$/.test(card))) throw new InvalidArgumentError(`"${text}" is not a list of card indices such as 0,1`);
  return cards.map(Number);
}

/** "(llama.cpp: llama-server version: 4567)" or "(llama.cpp: built-in, cpu build)", after the engines. */
/** "llamacpp (built-in, cuda build)" or "llamacpp (llama-server 4567 (abc1234))": which llama.cpp a replica runs; the engine alone otherwise. */
export function replicaEngineText(replica: Pick<ReplicaView, "engine" | "llama_cpp">): string {
  const llamaCpp = replica.llama_cpp;
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- an older server's answer lacks it
  if (llamaCpp === null || llamaCpp === undefined) return replica.engine;
  if (llamaCpp.kind === "built-in") return `${replica.engine} (built-in ${llamaCpp.version}, ${llamaCpp.build} build)`;
  return `${replica.engine} (llama-server${llamaCpp.version !== null ? ` ${llamaCpp.version.replace(/^version:\s*/i, "")}` : ""})`;
}

export function llamaCppText(llamaCpp: NodeView["llama_cpp"]): string {
  if (llamaCpp === undefined || llamaCpp === null) return "";
  if (llamaCpp.kind === "llama-server") return `  (llama.cpp: llama-server${llamaCpp.version !== null ? ` ${llamaCpp.version}` : ""} at ${llamaCpp.path})`;
  return `  (llama.cpp: built-in node-llama-cpp ${llamaCpp.version}, ${llamaCpp.build} build; installed: ${llamaCpp.builds.join(", ")})`;
}

/** "agent 0.2.0"; agents of 0.1.0 do not report their release. */
export function agentVersionText(version: NodeView["agent_version"]): string {
  return version === undefined || version === null ? "agent 0.1.0 or older" : `agent ${version}`;
}

export function describeNodes(nodes: readonly NodeView[], replicas: readonly ReplicaView[]): string {
  const blocks = nodes.map((node) => {
    // The node's fabric is only the default for its cards (a card group may name its own): show the ones the cards are on.
    const fabrics = node.gpus.length > 0 ? [...new Set(node.gpus.map((gpu) => gpu.fabric))].join(",") : node.fabric;
    const control = node.draining ? ", draining" : node.cordoned ? ", cordoned" : "";
    const header = `${node.name}  ${node.state}${node.simulated ? " (simulated)" : ""}${control}  ${node.address}  fabric ${fabrics}  ${node.cpu_cores} cores  ${gibibytes(node.memory_bytes)} RAM  ${gibibytes(node.disk_free_bytes)} disk free  ${agentVersionText(node.agent_version)}  seen ${ago(node.last_seen_at)}`;
    const engines = `  engines: ${node.engines.join(", ") || "none found"}${llamaCppText(node.llama_cpp)}`;
    const cards =
      node.gpus.length === 0
        ? ["  no GPUs (CPU replicas only)"]
        : renderTable(
            ["  CARD", "CLASS", "MEMORY", "FABRIC", "RUNS"],
            node.gpus.map((gpu) => {
              const replica = replicas.find((candidate) => candidate.id === gpu.replica);
              return [`  ${gpu.index}`, gpu.class, gibibytes(gpu.memory_bytes), gpu.fabric, replica ? `${replica.model} (${replica.id}, ${describeReplicaState(replica)})` : "-"];
            }),
          ).split("\n");
    const cpuReplicas = replicas.filter((replica) => replica.node === node.name && replica.gpus.length === 0);
    const cpuLines = cpuReplicas.map((replica) => `  cpu: ${replica.model} (${replica.id}, ${describeReplicaState(replica)})`);
    return [header, engines, ...cards, ...cpuLines].join("\n");
  });
  return blocks.join("\n\n");
}

export function registerNodesCommands(ctl: Command): void {
  ctl
    .command("nodes")
    .description("the machines that joined: their cards, what runs on them, memory and engines")
    .option("--json", "print the API's JSON ({nodes: [...]})")
    .action(async (_options, command: Command) => {
      const client = apiClient(ctlOptions(command));
      const result = await client.all(admin.nodes(), "nodes");
      if (ctlOptions(command).json) return printJson(result);
      if (result.nodes.length === 0) return print(`No node has joined. Get a join token with \`${printedLlmgwCommand()} ctl node token\`, then run \`${printedLlmgwCommand()} agent --server URL --token TOKEN\` on each machine.`);
      const { replicas } = await client.all(admin.replicas(), "replicas");
      print(describeNodes(result.nodes, replicas));
    });

  const node = ctl.command("node").description("nodes: join tokens, cordon, uncordon, drain");
  node
    .command("token")
    .description("create a join token for new agents (any number of machines may join with it)")
    .option("--json", "print the API's JSON ({token, created_at})")
    .action(async (_options, command: Command) => {
      const client = apiClient(ctlOptions(command));
      const result = await client.send(admin.nodeToken());
      if (ctlOptions(command).json) return printJson(result);
      print(`${result.token}\n\nOn each machine: ${printedLlmgwCommand()} agent --server ${client.baseUrl} --token ${result.token}\n(or set LLMGW_JOIN_TOKEN, which keeps the token out of the process list)`);
    });

  ctl
    .command("replicas")
    .description("replicas on every node: state (fetching N%, starting, ready, draining, lost with its node, failed with its reason), endpoint")
    .option("--model <name>", "only this model's replicas")
    .option("--node <name>", "only this node's replicas")
    .option("--json", "print the API's JSON ({replicas: [...]})")
    .action(async (options: { model?: string; node?: string }, command: Command) => {
      const query = new URLSearchParams();
      if (options.model) query.set("model", options.model);
      if (options.node) query.set("node", options.node);
      const result = await apiClient(ctlOptions(command)).send(admin.replicas(Object.fromEntries(query)));
      if (ctlOptions(command).json) return printJson(result);
      if (result.replicas.length === 0) return print(options.model ? `No replicas of ${options.model}.` : "No replicas.");
      const table = renderTable(
        ["ID", "MODEL", "PROFILE", "NODE", "GPUS", "ENGINE", "STATE", "ENDPOINT"],
        result.replicas.map((replica) => [
          replica.id,
          // A canary's replica is told apart where people read the model.
          replica.arm === "canary" ? `${replica.model} (canary)` : replica.model,
          replica.profile,
          // A replica over several nodes: each member's node and cards, by rank (the leader's first).
          replica.members ? replica.members.map((member) => `${member.node} (rank ${member.rank})`).join(" + ") : replica.node,
          replica.members ? replica.members.map((member) => member.gpus.join(",")).join(" + ") : replica.gpus.join(",") || "cpu",
          replicaEngineText(replica),
          describeReplicaState(replica),
          replica.endpoint ?? "-",
        ]),
      );
      const reasons = result.replicas.filter((replica) => replica.reason).map((replica) => `\n${replica.id}: ${replica.reason}`);
      print(table + reasons.join("\n"));
    });

  const replica = ctl.command("replica").description("start and stop a replica by hand on a named node");
  replica
    .command("start")
    .argument("<model>", "model name in the catalog")
    .requiredOption("--node <name>", "the node to run it on")
    .option("--profile <name>", "the model's profile (default: its first)")
    .option("--cards <list>", "card indices, e.g. 0,1 (default: the lowest free ones)", cardList)
    .option("--id <id>", "the replica's id (default: model name and a random suffix)")
    .option("--json", "print the API's replica object")
    .description("start one replica of a model on a node")
    .action(async (model: string, options: { node: string; profile?: string; cards?: number[]; id?: string }, command: Command) => {
      const result = await apiClient(ctlOptions(command)).send(admin.startReplica({
        model,
        node: options.node,
        ...(options.profile ? { profile: options.profile } : {}),
        ...(options.cards ? { cards: options.cards } : {}),
        ...(options.id ? { id: options.id } : {}),
      }));
      if (ctlOptions(command).json) return printJson(result);
      print(`Replica ${result.id} of ${result.model} on ${result.node} (cards ${result.gpus.join(",") || "none"}): ${describeReplicaState(result)}. Follow it with \`${printedLlmgwCommand()} ctl replicas --model ${result.model}\`.`);
    });
  replica
    .command("stop")
    .argument("<id>", "replica id")
    .option("--drain", "let it finish the requests it is serving first")
    .option("--json", "print the API's replica object")
    .description("stop a replica (SIGTERM, grace period, SIGKILL), or clear a failed one")
    .action(async (id: string, options: { drain?: boolean }, command: Command) => {
      const result = await apiClient(ctlOptions(command)).send(admin.stopReplica(id, options.drain === true));
      if (ctlOptions(command).json) return printJson(result);
      print(`Replica ${result.id} on ${result.node}: ${result.state}.`);
    });

  ctl
    .command("logs")
    .argument("<replica>", "replica id, or a model's name when it has one replica (its replicas are listed when it has several)")
    .option("--tail <lines>", "how many lines from the end (default 100)", wholeNumber(0))
    .option("-f, --follow", "keep printing new lines until the replica ends (Ctrl-C to stop)")
    .description("a replica's engine log (stdout and stderr), from its node")
    .action(async (written: string, options: { tail?: number; follow?: boolean }, command: Command) => {
      const client = apiClient(ctlOptions(command));
      const id = await replicaOfLogs(client, written);
      const query = new URLSearchParams({ tail: String(options.tail ?? 100), ...(options.follow ? { follow: "1" } : {}) });
      const body = await client.stream(admin.replicaLogs(id, Object.fromEntries(query)));
      for await (const chunk of body) process.stdout.write(chunk);
    });
}

/**
 * The replica whose log `ctl logs NAME` shows: NAME itself, or the one
 * replica of the model NAME (a replica id is its model's name and a suffix,
 * so the two never collide). A model with several is refused with their ids.
 */
async function replicaOfLogs(client: ReturnType<typeof apiClient>, name: string): Promise<string> {
  const { replicas } = await client.send(admin.replicas({ model: name }));
  const [only] = replicas;
  if (only === undefined) return name;
  if (replicas.length === 1) return only.id;
  throw new DomainError(
    "invalid_input",
    `model ${name} has ${replicas.length} replicas (${replicas.map((replica) => replica.id).join(", ")}); name the one whose log to show`,
    `\`llmgw ctl logs REPLICA\` with one of them.`,
    replicas.map((replica) => ({ where: replica.id, message: `on ${replica.node} (${replica.gpus.length > 0 ? `cards ${replica.gpus.join(",")}` : "cpu"}), ${replica.state}` })),
  );
}
