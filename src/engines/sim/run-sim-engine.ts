import type { EngineName } from "../../catalog/index.js";
import { startSimEngine, type SimEngineHandle } from "./sim-engine.js";

/**
 * The `llmgw sim-engine` process: starts the engine with this process's
 * environment and exits the way a real engine does — 0 after SIGTERM or
 * SIGINT, 1 when it cannot start (a port already taken, a command line it
 * cannot read), and a fault's own status.
 */
export async function runSimEngine(options: { readonly engine: EngineName; readonly argv: readonly string[] }): Promise<SimEngineHandle> {
  let handle: SimEngineHandle;
  try {
    handle = await startSimEngine({ engine: options.engine, argv: options.argv, environment: process.env });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = typeof error === "object" && error !== null && "hint" in error ? `\n${String(error.hint)}` : "";
    process.stderr.write(`llmgw sim-engine: cannot start: ${message}${hint}\n`);
    process.exit(1);
  }
  const stop = (signal: string) => {
    process.stdout.write(`llmgw sim-engine: ${signal} received, shutting down\n`);
    void handle.close().finally(() => process.exit(0));
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  return handle;
}
