import type { Command } from "commander";
import { assembleProgram, programRoot } from "./program-root.js";
import { processCommands } from "./process-commands.js";

/**
 * The whole command tree, built without running anything: the generated ctl
 * reference, the shell completion scripts and main.ts (for any command line
 * but ctl's) read it.
 */
export function buildProgram(): Command {
  return assembleProgram(programRoot(), processCommands);
}
