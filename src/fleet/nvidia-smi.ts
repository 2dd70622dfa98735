import { DomainError } from "../errors/light.js";
import { cardClassFromProductName } from "./card-classes.js";

/**
 * The one query the agent runs to learn its cards. CSV without header or
 * units keeps the parse independent of the driver version's column titles
 * and of the locale's unit names.
 */
export const nvidiaSmiQueryArguments = [
  "--query-gpu=index,uuid,name,memory.total,memory.used",
  "--format=csv,noheader,nounits",
] as const;

export interface NvidiaSmiGpu {
  readonly index: number;
  readonly uuid: string;
  /** The product name as printed, e.g. "NVIDIA H100 80GB HBM3". */
  readonly name: string;
  readonly cardClass: string;
  readonly memoryBytes: number;
  /** Undefined when the driver reports "[N/A]" (some MIG and vGPU setups). */
  readonly memoryUsedBytes: number | undefined;
}

const MiB = 1024 * 1024;

function mebibytes(field: string): number | undefined {
  // "[N/A]" and "[Not Supported]" appear on MIG instances and some vGPUs.
  if (!/^\d+(\.\d+)?$/.test(field)) return undefined;
  return Math.round(Number(field) * MiB);
}

/**
 * Parses the output of `nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used
 * --format=csv,noheader,nounits`. Fields are trimmed because drivers pad them
 * inconsistently (", " in most versions, tabs or runs of spaces in others),
 * and memory is MiB on the wire, bytes here.
 */
export function parseNvidiaSmi(output: string): NvidiaSmiGpu[] {
  const gpus: NvidiaSmiGpu[] = [];
  const lines = output.split(/\r?\n/);
  for (const [lineIndex, rawLine] of lines.entries()) {
    const line = rawLine.trim();
    if (line.length === 0) continue;
    const fields = line.split(",").map((field) => field.trim());
    // A product name never contains a comma, but guard the count so a future
    // column added by a wrapper script is an error and not a shifted parse.
    if (fields.length !== 5) {
      throw new DomainError(
        "invalid_input",
        `nvidia-smi output line ${lineIndex + 1} has ${fields.length} fields, expected 5 (index, uuid, name, memory.total, memory.used): "${line}"`,
        `Check that \`nvidia-smi ${nvidiaSmiQueryArguments.join(" ")}\` runs on this node and prints one card per line.`,
      );
    }
    const [indexField, uuid, name, totalField, usedField] = fields as [string, string, string, string, string];
    const memoryBytes = mebibytes(totalField);
    if (!/^\d+$/.test(indexField) || memoryBytes === undefined) {
      throw new DomainError(
        "invalid_input",
        `nvidia-smi output line ${lineIndex + 1} has no card index or total memory: "${line}"`,
        "Run nvidia-smi by hand on this node; a driver that cannot read a card prints an error in its place.",
      );
    }
    gpus.push({
      index: Number(indexField),
      uuid,
      name,
      cardClass: cardClassFromProductName(name),
      memoryBytes,
      memoryUsedBytes: mebibytes(usedField),
    });
  }
  return gpus.sort((left, right) => left.index - right.index);
}

/**
 * The processes on the cards, to tell memory held by engines llmgw started
 * from memory held by anyone else (a training job, a notebook).
 */
export const nvidiaSmiComputeAppsArguments = ["--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"] as const;

export interface NvidiaSmiComputeApp {
  readonly cardUuid: string;
  readonly pid: number;
  readonly usedBytes: number;
}

/**
 * Parses `nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory
 * --format=csv,noheader,nounits`. Leniently: a line without a pid or with
 * "[N/A]" memory (no permission to see another user's process, some vGPUs)
 * is left out, since it cannot be counted either way, and the rest still tells.
 */
export function parseNvidiaSmiComputeApps(output: string): NvidiaSmiComputeApp[] {
  const apps: NvidiaSmiComputeApp[] = [];
  for (const rawLine of output.split(/\r?\n/)) {
    const fields = rawLine.split(",").map((field) => field.trim());
    if (fields.length !== 3) continue;
    const [cardUuid, pidField, usedField] = fields as [string, string, string];
    const usedBytes = mebibytes(usedField);
    if (cardUuid.length === 0 || !/^\d+$/.test(pidField) || usedBytes === undefined) continue;
    apps.push({ cardUuid, pid: Number(pidField), usedBytes });
  }
  return apps;
}
