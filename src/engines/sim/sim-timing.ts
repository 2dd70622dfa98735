import { z } from "zod";
import { cardClassInfo, unknownClassBandwidthGBps } from "../../fleet/for-engines.js";
import { EngineArgumentsInvalid } from "../../errors/for-engines.js";
import type { EngineName } from "../../catalog/index.js";

/** How fast the simulated engine answers, before LLMGW_SIM_SPEED divides its delays. */
export interface SimTiming {
  readonly decodeTokensPerSecond: number;
  readonly prefillTokensPerSecond: number;
  /** Delays are divided by this; Infinity answers as fast as the machine can. */
  readonly speed: number;
  /** Where the numbers came from, for the startup log line. */
  readonly source: string;
}

/**
 * Decoding reads every weight on a card once per token, so a card decodes
 * bandwidth / weights-per-card tokens a second (a 7B model at bf16, 15.2 GB
 * per card, on an H100's 3,350 GB/s: about 220 tokens/s, as vLLM measures).
 * Prefill pushes the whole prompt through one read of the weights and is
 * bound by compute instead; 50 times the decode rate lands near vLLM's
 * prefill on the same card (about 10,000 tokens/s).
 */
const prefillOverDecode = 50;

/** With no planner numbers, a fast engine: tests and the demo should not wait. */
const defaultDecodeTokensPerSecond = 1000;

/** Host memory bandwidth assumed for a CPU replica (a two-channel DDR5 desktop is about 80 GB/s). */
const cpuBandwidthGBps = 50;

const positiveNumber = z.coerce.number().positive();

export const simEnvironmentVariables = {
  weightsBytesPerCard: "LLMGW_SIM_WEIGHTS_BYTES_PER_CARD",
  cardClass: "LLMGW_SIM_GPU_CLASS",
  bandwidthGBps: "LLMGW_SIM_BANDWIDTH_GBPS",
  speed: "LLMGW_SIM_SPEED",
  fault: "LLMGW_SIM_FAULT",
  loadMilliseconds: "LLMGW_SIM_LOAD_MS",
} as const;

function readPositive(engine: EngineName, environment: Readonly<Record<string, string | undefined>>, name: string): number | undefined {
  const text = environment[name];
  if (text === undefined || text === "") return undefined;
  const parsed = positiveNumber.safeParse(text);
  if (!parsed.success) throw new EngineArgumentsInvalid(engine, `${name} must be a number greater than 0, got ${JSON.stringify(text)}`);
  return parsed.data;
}

/** The timing for a replica on `cardCount` cards (0: the CPU), from the planner's numbers in the environment. */
export function simTimingFromEnvironment(
  engine: EngineName,
  environment: Readonly<Record<string, string | undefined>>,
  cardCount: number,
): SimTiming {
  const speed = readPositive(engine, environment, simEnvironmentVariables.speed) ?? 1;
  const weightsBytesPerCard = readPositive(engine, environment, simEnvironmentVariables.weightsBytesPerCard);
  const explicitBandwidth = readPositive(engine, environment, simEnvironmentVariables.bandwidthGBps);
  const cardClass = environment[simEnvironmentVariables.cardClass];
  if (weightsBytesPerCard === undefined) {
    const decodeTokensPerSecond = defaultDecodeTokensPerSecond;
    return { decodeTokensPerSecond, prefillTokensPerSecond: decodeTokensPerSecond * prefillOverDecode, speed, source: "defaults" };
  }
  let bandwidthGBps: number;
  let source: string;
  if (explicitBandwidth !== undefined) {
    bandwidthGBps = explicitBandwidth;
    source = `${bandwidthGBps} GB/s`;
  } else if (cardCount === 0) {
    bandwidthGBps = cpuBandwidthGBps;
    source = `CPU at ${bandwidthGBps} GB/s`;
  } else {
    bandwidthGBps = (cardClass === undefined ? undefined : cardClassInfo(cardClass)?.bandwidthGBps) ?? unknownClassBandwidthGBps;
    source = `${cardClass ?? "unknown class"} at ${bandwidthGBps} GB/s`;
  }
  const decodeTokensPerSecond = (bandwidthGBps * 1e9) / weightsBytesPerCard;
  return {
    decodeTokensPerSecond,
    prefillTokensPerSecond: decodeTokensPerSecond * prefillOverDecode,
    speed,
    source: `${source}, ${(weightsBytesPerCard / 1e9).toFixed(1)} GB of weights per card`,
  };
}

/** Prefill of the prompt plus the first decode step. */
export function timeToFirstTokenMilliseconds(timing: SimTiming, promptTokens: number): number {
  const seconds = promptTokens / timing.prefillTokensPerSecond + 1 / timing.decodeTokensPerSecond;
  return (seconds * 1000) / timing.speed;
}

export function decodeStepMilliseconds(timing: SimTiming): number {
  return 1000 / timing.decodeTokensPerSecond / timing.speed;
}
