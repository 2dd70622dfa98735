import type { EngineName } from "../../catalog/index.js";
import { EngineArgumentsInvalid } from "../../errors/for-engines.js";
import { splitArguments } from "./parse-engine-argv.js";

/** This member's place in a replica that spans nodes, read from the engine's own distributed flags. */
export interface GangArguments {
  /** Nodes the replica spans (vLLM and SGLang `--nnodes`). */
  readonly nodes: number;
  /** This member's node rank; 0 is the leader, which serves the API and holds the rendezvous. */
  readonly rank: number;
  /** Where the leader listens for its workers (vLLM `--master-addr`, SGLang `--dist-init-addr` before the colon). */
  readonly leaderAddress: string;
  /** The rendezvous port; 0 on the leader picks a free one (tests). */
  readonly leaderPort: number;
  /** Pipeline stages a token passes through one after another (vLLM `--pipeline-parallel-size`, SGLang `--pp-size`). */
  readonly pipelineStages: number;
}

function whole(engine: EngineName, flag: string, text: string | undefined, minimum: number, maximum = Number.MAX_SAFE_INTEGER): number {
  const value = Number(text);
  if (text === undefined || text.trim() === "" || !Number.isInteger(value) || value < minimum || value > maximum) {
    throw new EngineArgumentsInvalid(engine, `${flag} needs a whole number from ${minimum} to ${maximum}, got ${JSON.stringify(text ?? null)}`);
  }
  return value;
}

/**
 * The distributed part of a vLLM or SGLang command line, as the drivers write
 * it for a member of a replica over several nodes; undefined for a replica on
 * one node (no `--nnodes`, or `--nnodes 1`). Refuses what the real engine
 * would refuse or silently get wrong: a rank outside the gang, a missing
 * leader address, and (vLLM) a worker that would serve the API or a leader
 * that would not.
 */
export function parseGangArguments(engine: EngineName, argv: readonly string[]): GangArguments | undefined {
  if (engine !== "vllm" && engine !== "sglang") return undefined;
  const { flags } = splitArguments(argv, {
    nodes: { names: ["--nnodes"], kind: "value" },
    rank: { names: ["--node-rank"], kind: "value" },
    masterAddress: { names: ["--master-addr"], kind: "value" },
    masterPort: { names: ["--master-port"], kind: "value" },
    distInitAddress: { names: ["--dist-init-addr"], kind: "value" },
    headless: { names: ["--headless"], kind: "switch" },
    pipeline: { names: engine === "vllm" ? ["--pipeline-parallel-size", "-pp"] : ["--pp-size", "--pipeline-parallel-size"], kind: "value" },
  });
  const nodesText = flags.get("nodes")?.[0];
  if (nodesText === undefined) return undefined;
  const nodes = whole(engine, "--nnodes", nodesText, 1);
  if (nodes === 1) return undefined;
  const rank = whole(engine, "--node-rank", flags.get("rank")?.[0] ?? "0", 0, nodes - 1);
  const pipelineText = flags.get("pipeline")?.[0];
  const pipelineStages = pipelineText === undefined ? 1 : whole(engine, engine === "vllm" ? "--pipeline-parallel-size" : "--pp-size", pipelineText, 1);
  let leaderAddress: string | undefined;
  let portText: string | undefined;
  if (engine === "vllm") {
    leaderAddress = flags.get("masterAddress")?.[0];
    portText = flags.get("masterPort")?.[0];
    if (leaderAddress === undefined) throw new EngineArgumentsInvalid(engine, `--nnodes ${nodes} needs --master-addr, the leader's address on the fabric`);
    const headless = flags.has("headless");
    if (rank > 0 && !headless) throw new EngineArgumentsInvalid(engine, `node rank ${rank} needs --headless: only rank 0 serves the API`);
    if (rank === 0 && headless) throw new EngineArgumentsInvalid(engine, "node rank 0 is the leader and serves the API: drop --headless");
  } else {
    const text = flags.get("distInitAddress")?.[0];
    if (text === undefined) throw new EngineArgumentsInvalid(engine, `--nnodes ${nodes} needs --dist-init-addr HOST:PORT, the leader's address on the fabric`);
    const colon = text.lastIndexOf(":");
    if (colon <= 0) throw new EngineArgumentsInvalid(engine, `--dist-init-addr ${JSON.stringify(text)} is not HOST:PORT`);
    leaderAddress = text.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
    portText = text.slice(colon + 1);
  }
  const portFlag = engine === "vllm" ? "--master-port" : "--dist-init-addr's port";
  // Port 0 only on the leader, which then picks one; a worker must know where to go. vLLM defaults to 29501.
  const leaderPort = whole(engine, portFlag, portText ?? (engine === "vllm" ? "29501" : undefined), rank === 0 ? 0 : 1, 65535);
  return { nodes, rank, leaderAddress, leaderPort, pipelineStages };
}
