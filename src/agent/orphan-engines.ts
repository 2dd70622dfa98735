import type { EngineMarker } from "./engine-marker.js";
import type { MarkedProcess } from "./find-marked-processes.js";

/** One engine found running: the processes of one launch. */
export interface FoundEngine {
  /** Undefined when its marker is damaged: it can only be stopped. */
  readonly marker: EngineMarker | undefined;
  /** The process the agent spawned (the leader of its own process group), when it still runs. */
  readonly leader: MarkedProcess | undefined;
  readonly processes: readonly MarkedProcess[];
}

/** What the agent's records already account for: their launches and process groups. */
export interface KnownEngines {
  readonly launchIds: ReadonlySet<string>;
  readonly processGroups: ReadonlySet<number>;
}

/**
 * The engines found running that no record accounts for, one per launch
 * (processes with a damaged marker, one per process group). Pure: the agent
 * reads /proc, then adopts or stops what this returns.
 */
export function orphanEngines(found: readonly MarkedProcess[], known: KnownEngines): FoundEngine[] {
  const launches = new Map<string, MarkedProcess[]>();
  for (const process of found) {
    if (known.processGroups.has(process.processGroup)) continue;
    if (process.marker && known.launchIds.has(process.marker.launchId)) continue;
    const key = process.marker ? `launch ${process.marker.launchId}` : `group ${process.processGroup}`;
    launches.set(key, [...(launches.get(key) ?? []), process]);
  }
  const engines = [...launches.values()].map((processes): FoundEngine => {
    // The spawned engine leads its own group; a worker that moved to a group of its own does not lead
    // the engine's. Of several leaders (a worker that called setsid), the oldest is the one spawned.
    const leaders = processes.filter((process) => process.pid === process.processGroup).sort((left, right) => compareTicks(left.startTicks, right.startTicks));
    return { marker: processes.find((process) => process.marker)?.marker, leader: leaders[0], processes };
  });
  return engines.sort((left, right) => (left.processes[0]?.pid ?? 0) - (right.processes[0]?.pid ?? 0));
}

function compareTicks(left: string, right: string): number {
  const difference = BigInt(left) - BigInt(right);
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
}
