import { setTimeout as sleep } from "node:timers/promises";
import { DomainError } from "../../errors/light.js";
import { isPortFree, probeHealth } from "../engine-process.js";
import { describeExit, type Replica } from "./replica-record.js";
import type { ReplicaSupervisorOptions } from "./supervisor-options.js";

/** What the wait for an engine uses of its supervisor. */
export interface ReadinessSteps {
  readonly options: Pick<ReplicaSupervisorOptions, "nodeName" | "healthPollMs" | "headlessSettleMs">;
  readonly probeHost: string;
  interrupted(replica: Replica): boolean;
  portTaken(replica: Replica, port: number): DomainError;
  logTail(id: string): Promise<string>;
}

/**
 * Waits until a started engine is ready to be reported so: its health path
 * answers 200, or, for an engine that serves nothing to probe (a headless
 * worker), its process has kept running for the settle time. Throws with the
 * engine's exit and log tail when it exits first, and past the deadline when
 * its health never answers. Returns without a verdict when interrupted.
 */
export async function waitReady(steps: ReadinessSteps, replica: Replica, timeoutMs: number): Promise<void> {
  if (replica.headless) {
    await waitSettled(steps, replica);
    return;
  }
  const { spec } = replica;
  const url = `http://${steps.probeHost}:${replica.port ?? 0}${replica.healthPath ?? "/health"}`;
  const deadline = Date.now() + timeoutMs;
  while (!steps.interrupted(replica)) {
    if (replica.exit) throw await exitedWhileLoading(steps, replica);
    if (await probeHealth(url, Math.min(3000, Math.max(500, steps.options.healthPollMs * 4)))) return;
    if (Date.now() >= deadline) {
      throw new DomainError(
        "engine_failed",
        `engine ${spec.engine} for ${spec.model} on node ${steps.options.nodeName} did not answer GET ${url} within ${Math.round(timeoutMs / 1000)} s${await steps.logTail(spec.id)}`,
        "Give the profile a longer startup timeout if the model is large, or read the log for a load that hangs.",
      );
    }
    if (!(await pause(steps.options.healthPollMs, replica))) return;
  }
}

/** A headless engine: ready once it has run the settle time through, failed if it exits within it. */
async function waitSettled(steps: ReadinessSteps, replica: Replica): Promise<void> {
  const settled = Date.now() + steps.options.headlessSettleMs;
  while (!steps.interrupted(replica)) {
    if (replica.exit) throw await exitedWhileLoading(steps, replica);
    const left = settled - Date.now();
    if (left <= 0) return;
    if (!(await pause(Math.min(left, steps.options.healthPollMs), replica))) return;
  }
}

async function exitedWhileLoading(steps: ReadinessSteps, replica: Replica): Promise<DomainError> {
  const { spec } = replica;
  const port = replica.port;
  // A port someone else holds is the likelier cause than anything in the log; a headless engine binds none.
  if (!replica.headless && port !== undefined && !(await isPortFree(port))) return steps.portTaken(replica, port);
  return new DomainError(
    "engine_failed",
    `engine ${spec.engine} ${describeExit(replica.exit ?? { code: null, signal: null })} while loading ${spec.model} on node ${steps.options.nodeName}${await steps.logTail(spec.id)}`,
    "Read the log tail above; `llmgw ctl logs " + spec.id + "` shows all of it.",
  );
}

/** False when the replica's wait was aborted (a stop, the agent closing). */
async function pause(ms: number, replica: Replica): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal: replica.abort.signal });
    return true;
  } catch {
    return false;
  }
}
