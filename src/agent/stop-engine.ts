import { setTimeout as sleep } from "node:timers/promises";
import { markedAgentDirectory, markerVariables } from "./engine-marker.js";
import { isProcessGroupAlive, listProcesses, readProcessEnvironment, stopProcessGroup } from "./engine-process.js";

/** The processes of one engine: its process group, and every process carrying its launch's marker. */
export interface EngineTarget {
  /**
   * With a launch id, the group counts only while a member of it carries the
   * marker: a group id is a pid, reused once the engine is long gone, and
   * signalling it then would hit another program of this user. Without one
   * (an engine started before markers), give it only while the engine's
   * leader is known to run.
   */
  readonly processGroup: number | undefined;
  /** Undefined for an engine started before engines carried a marker: its group alone is known. */
  readonly launchId: string | undefined;
  readonly agentDirectory: string;
}

export interface StopOutcome {
  /** SIGKILL was needed: something ignored SIGTERM for the whole grace period. */
  readonly killed: boolean;
  /** Processes of the engine still alive after SIGKILL (uninterruptible, or not this user's). */
  readonly survivors: readonly number[];
}

/** The live pids of the engine; undefined without /proc. */
async function engineProcesses(target: EngineTarget): Promise<number[] | undefined> {
  const processes = await listProcesses();
  if (processes === undefined) return undefined;
  const others = processes.filter((candidate) => candidate.pid !== process.pid);
  const inGroup = (candidate: (typeof others)[number]) => target.processGroup !== undefined && candidate.processGroup === target.processGroup;
  const { launchId } = target;
  if (launchId === undefined) return others.filter(inGroup).map((candidate) => candidate.pid);
  const marked = await Promise.all(
    others.map(async (candidate) => {
      const environment = await readProcessEnvironment(candidate.pid);
      return environment !== undefined && markedAgentDirectory(environment) === target.agentDirectory && environment[markerVariables.launchId] === launchId;
    }),
  );
  const groupIsTheEngines = others.some((candidate, index) => marked[index] && inGroup(candidate));
  return others.filter((candidate, index) => marked[index] || (groupIsTheEngines && inGroup(candidate))).map((candidate) => candidate.pid);
}

function signal(pids: readonly number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name);
    } catch {
      // ESRCH: gone already, which is what a stop wants.
    }
  }
}

/**
 * Stops an engine and answers only once it is gone: SIGTERM to its group
 * (vLLM and SGLang fork a worker per card) and to every process carrying its
 * launch's marker (a worker that left the group still holds a card), a grace
 * period to finish and free the cards, SIGKILL to what is left, then a last
 * look. A replica is called stopped only when that look finds nothing: a
 * stop that answered "stopped" while a worker lived let the server place a
 * new replica on a card still in use.
 */
export async function stopEngine(target: EngineTarget, graceMs: number, pollMs = 100): Promise<StopOutcome> {
  const first = await engineProcesses(target);
  if (first === undefined) {
    // No /proc (macOS in development): the process group is all that can be seen.
    if (target.processGroup === undefined) return { killed: false, survivors: [] };
    const killed = await stopProcessGroup(target.processGroup, graceMs, pollMs);
    return { killed, survivors: (await isProcessGroupAlive(target.processGroup)) ? [target.processGroup] : [] };
  }
  if (first.length === 0) return { killed: false, survivors: [] };
  // Signalled by pid only: the group id may be a stranger's by now (see EngineTarget).
  signal(first, "SIGTERM");
  const deadline = Date.now() + graceMs;
  let alive = first;
  while (Date.now() < deadline) {
    await sleep(pollMs);
    alive = (await engineProcesses(target)) ?? [];
    if (alive.length === 0) return { killed: false, survivors: [] };
  }
  signal(alive, "SIGKILL");
  for (let attempt = 0; attempt < 50; attempt += 1) {
    await sleep(pollMs);
    alive = (await engineProcesses(target)) ?? [];
    if (alive.length === 0) return { killed: true, survivors: [] };
    // Something forked during the stop: it gets the same end.
    signal(alive, "SIGKILL");
  }
  return { killed: true, survivors: alive };
}
