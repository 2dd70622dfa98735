import { chmodSync, writeFileSync } from "node:fs";
import path from "node:path";
import { llmgwBin, runToCompletion, withoutLlmgwVariables, type CliResult } from "./processes.js";
import { temporaryDirectory } from "./temporary-directory.js";

/**
 * A search path whose first folder holds an `llmgw` that runs this
 * checkout's bin, so that a printed command can be pasted into a shell
 * exactly as a user would.
 */
export function pathWithLlmgw(): string {
  const directory = temporaryDirectory("llmgw-path-");
  const shim = path.join(directory, "llmgw");
  writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${llmgwBin}" "$@"\n`);
  chmodSync(shim, 0o755);
  return `${directory}:${path.dirname(process.execPath)}:${process.env.PATH ?? ""}`;
}

/** Runs a printed command line in a shell, in `cwd`, with none of the developer's LLMGW_ settings. */
export function pasteInShell(commandLine: string, cwd: string, searchPath: string): Promise<CliResult> {
  return runToCompletion("sh", ["-c", commandLine], { cwd, env: { ...withoutLlmgwVariables(process.env), PATH: searchPath } });
}
