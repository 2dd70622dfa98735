import { setFlagsFromString } from "node:v8";
import { serverHeapSetting, tunedNodeArguments } from "../serving-node-flags.js";

/**
 * The entry point bin/llmgw.js loads. For the commands that serve requests it
 * first replaces this process with node started with the serving flags
 * (process.execve: the same process id, the same standard streams, nothing
 * started yet to lose), so a supervisor, a pid file and `kill` all keep
 * working on the process they started. Node before 22.15 and Windows have no
 * execve: the command then runs as started, untuned. LLMGW_NODE_TUNING=off
 * runs it as started anywhere.
 */
function startTuned(): void {
  const argumentsFirst = tunedNodeArguments(process.argv[2], process.execArgv, process.env.NODE_OPTIONS, process.env.LLMGW_NODE_TUNING);
  // Typed by hand: the @types/node this builds with predates process.execve (Node 22.15 and 23.11).
  const execve = (process as { execve?: (file: string, args: readonly string[], env?: NodeJS.ProcessEnv) => never }).execve;
  if (argumentsFirst === undefined || typeof execve !== "function") return;
  try {
    execve(process.execPath, [process.execPath, ...argumentsFirst, ...process.argv.slice(1)], process.env);
  } catch {
    // execve failed and this process is unchanged (no such file, no permission): run as started.
  }
}

/** The old generation's growth for `llmgw server` (see serverHeapSetting), set in the process that runs the command. */
function tuneHeap(): void {
  const setting = serverHeapSetting(process.argv[2], process.execArgv, process.env.LLMGW_NODE_TUNING);
  if (setting !== undefined) setFlagsFromString(setting);
}

startTuned();
tuneHeap();
await import("./main.js");
