import { DomainError } from "../errors/light.js";
import { cardClassFromProductName, cardClassInfo } from "./card-classes.js";

/**
 * The hardware shorthand shared by `ctl model plan --gpus` (what-if fleets)
 * and `llmgw agent --simulate` (pretend hardware):
 *
 *   "2xH100-80GB@nvl0,4xL40S-48GB@pcie,cpu:32c/256g"
 *
 * A group may end in `+foreign=Ng`: each of its cards has N GiB held by a
 * process llmgw did not start (for --simulate, what the pretend cards report;
 * for --gpus, cards partly taken by someone else).
 *
 * A GPU group is [NODES x] COUNT x CARD[-MEMORY] [@FABRIC]. For --gpus each
 * comma-separated group is one node, or NODES alike nodes on one fabric
 * ("2x8xH100-80GB@ib0": two nodes of eight cards, for replicas that span
 * nodes); for --simulate the groups are all the
 * agent's own cards, numbered in order, so a node can have one card part-held
 * ("1xH100-80GB@nvl0,1xH100-80GB@nvl0+foreign=20g") beside an untouched twin.
 * `cpu:Nc/Mg` sets host cores and memory (for --simulate, the node's host; for
 * --gpus, a CPU-only node).
 */
export interface CardGroupSpec {
  /** Alike nodes the group stands for (what-if fleets only); 1 when not written. */
  readonly nodes: number;
  /** Cards per node. */
  readonly count: number;
  readonly cardClass: string;
  /** The card's name as written, e.g. "H100-80GB". */
  readonly label: string;
  readonly memoryBytes: number;
  /** Undefined when not given: the node's own fabric (one per node). */
  readonly fabric: string | undefined;
  /** Bytes each card of the group has taken by processes llmgw did not start; absent when none. */
  readonly foreignBytes?: number;
}

export interface HostSpec {
  readonly cpuCores: number;
  readonly memoryBytes: number;
}

export interface HardwareSpec {
  readonly groups: readonly CardGroupSpec[];
  readonly host: HostSpec | undefined;
}

const GiB = 1024 ** 3;

function invalid(spec: string, part: string, why: string): DomainError {
  return new DomainError(
    "invalid_input",
    `hardware spec "${spec}": "${part}" ${why}`,
    'Write each node as COUNTxCARD-MEMORY@FABRIC, comma-separated, e.g. "2xH100-80GB@nvl0,4xL40S-48GB@pcie" (NODESxCOUNTxCARD@FABRIC for several alike nodes on one fabric, as in "2x8xH100-80GB@ib0"; a group ending in +foreign=20g has 20 GiB per card taken by other processes), and host resources as "cpu:32c/256g".',
  );
}

export function parseHardwareSpec(spec: string): HardwareSpec {
  const groups: CardGroupSpec[] = [];
  let host: HostSpec | undefined;
  const parts = spec.split(",").map((part) => part.trim()).filter((part) => part.length > 0);
  if (parts.length === 0) throw invalid(spec, spec, "is empty");
  for (const part of parts) {
    const cpu = /^cpu:(\d+)c\/(\d+(?:\.\d+)?)g$/i.exec(part);
    if (cpu) {
      if (host) throw invalid(spec, part, "repeats the host (give cpu:… once)");
      host = { cpuCores: Number(cpu[1]), memoryBytes: Math.round(Number(cpu[2]) * GiB) };
      continue;
    }
    const nodesPrefix = /^(\d+)x(?=\d+x)/i.exec(part);
    const nodes = nodesPrefix ? Number(nodesPrefix[1]) : 1;
    if (nodes < 1) throw invalid(spec, part, "has no nodes (the node count must be 1 or more)");
    const rest = nodesPrefix ? part.slice(nodesPrefix[0].length) : part;
    const gpu = /^(\d+)x([A-Za-z0-9][A-Za-z0-9 ._-]*?)(?:-(\d+(?:\.\d+)?)GB?)?(?:@([A-Za-z0-9._-]+))?(?:\+foreign=(\d+(?:\.\d+)?)g)?$/i.exec(rest);
    if (!gpu) throw invalid(spec, part, "is not COUNTxCARD-MEMORY@FABRIC, NODESxCOUNTxCARD-MEMORY@FABRIC or cpu:Nc/Mg");
    const count = Number(gpu[1]);
    if (count < 1) throw invalid(spec, part, "has no cards (the count must be 1 or more)");
    const name = gpu[2] as string;
    const cardClass = cardClassFromProductName(name);
    const memoryGB = gpu[3] !== undefined ? Number(gpu[3]) : cardClassInfo(cardClass)?.defaultMemoryGB;
    if (memoryGB === undefined) throw invalid(spec, part, `names a card whose memory llmgw does not know; add it, as in ${name}-48GB`);
    const foreignGB = gpu[5] !== undefined ? Number(gpu[5]) : undefined;
    if (foreignGB !== undefined && foreignGB > memoryGB) throw invalid(spec, part, `has ${foreignGB} GiB of other processes on a ${memoryGB} GiB card; give at most the card's memory`);
    groups.push({
      nodes,
      count,
      cardClass,
      label: gpu[3] !== undefined ? `${name}-${gpu[3]}GB` : name,
      memoryBytes: Math.round(memoryGB * GiB),
      fabric: gpu[4],
      ...(foreignGB !== undefined ? { foreignBytes: Math.round(foreignGB * GiB) } : {}),
    });
  }
  return { groups, host };
}

/** The spec of one agent's pretend cards (--simulate): an agent is one node, so no group may stand for several. */
export function oneNodeSpec(spec: HardwareSpec, text: string): HardwareSpec {
  const several = spec.groups.find((group) => group.nodes > 1);
  if (several === undefined) return spec;
  throw new DomainError(
    "config_invalid",
    `--simulate "${text}" gives ${several.nodes} nodes in one group, and an agent is one node`,
    `Start one agent per node, each with --simulate "${several.count}x${several.label}${several.fabric !== undefined ? `@${several.fabric}` : ""}" (the same fabric puts them on one network).`,
  );
}
