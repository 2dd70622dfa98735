import { listProcesses, readProcessEnvironment, type ProcessStat } from "./engine-process.js";
import { markedAgentDirectory, readMarker, type EngineMarker } from "./engine-marker.js";

export interface MarkedProcess extends ProcessStat {
  /** Undefined when the process names this agent's directory but the rest of its marker is damaged. */
  readonly marker: EngineMarker | undefined;
}

/**
 * Every live process whose environment names this agent's directory: the
 * engines it started and whatever they forked. Undefined where there is no
 * /proc to read (the agent then knows only what its state file names).
 */
export async function findMarkedProcesses(agentDirectory: string): Promise<MarkedProcess[] | undefined> {
  const processes = await listProcesses();
  if (processes === undefined) return undefined;
  const others = processes.filter((candidate) => candidate.pid !== process.pid);
  const environments = await Promise.all(others.map((candidate) => readProcessEnvironment(candidate.pid)));
  return others.flatMap((candidate, index) => {
    const environment = environments[index];
    if (!environment || markedAgentDirectory(environment) !== agentDirectory) return [];
    return [{ ...candidate, marker: readMarker(environment) }];
  });
}
