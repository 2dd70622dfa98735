import { spawn } from "node:child_process";
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

/**
 * What one pasted line may take when the caller does not say: the slowest
 * printed lines wait for a replica to start (a surge restart, `--wait`),
 * seconds on an idle machine and well under this on a loaded one.
 */
export const pastedLineWithinMs = 120_000;

/**
 * Runs a printed command line in a shell, in `cwd`, with none of the
 * developer's LLMGW_ settings, and nothing on its stdin (a line that asks for
 * input reads end of file, as no pasted line may). A line still running after
 * `withinMs` is killed with all it started, and the promise rejects with the
 * line's text and what it printed.
 */
export function pasteInShell(commandLine: string, cwd: string, searchPath: string, withinMs = pastedLineWithinMs): Promise<CliResult> {
  return runToCompletion("sh", ["-c", commandLine], {
    cwd,
    env: { ...withoutLlmgwVariables(process.env), PATH: searchPath },
    withinMs,
    what: `the pasted line \`${commandLine.split("\n").at(-1) ?? commandLine}\``,
  });
}

/**
 * Runs a printed line that follows until Ctrl-C (`--follow`) as a person
 * does: watch it until `until` shows up in what it printed, then press
 * Ctrl-C (SIGINT to its process group). Resolves with what it printed;
 * rejects, naming the line, when `until` did not show up within `withinMs`.
 */
export function followInShell(commandLine: string, cwd: string, searchPath: string, until: RegExp, withinMs = pastedLineWithinMs): Promise<string> {
  const line = commandLine.split("\n").at(-1) ?? commandLine;
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", commandLine], { cwd, env: { ...withoutLlmgwVariables(process.env), PATH: searchPath }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    let settled = false;
    const stop = (signal: NodeJS.Signals) => {
      try {
        process.kill(-(child.pid as number), signal);
      } catch {
        // Gone already.
      }
    };
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const timer = setTimeout(() => {
      stop("SIGKILL");
      settle(() => reject(new Error(`the pasted line \`${line}\`\n  printed nothing matching ${until} within ${withinMs / 1000} s; killed with its process group. It printed:\n${stdout}${stderr ? `\n(stderr)\n${stderr}` : ""}`)));
    }, withinMs);
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (until.test(stdout)) {
        stop("SIGINT");
        // Ctrl-C stops it; anything that ignored it goes a little later, so no follower outlives the test.
        setTimeout(() => stop("SIGKILL"), 5000).unref();
        settle(() => resolve(stdout));
      }
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", (error) => settle(() => reject(error)));
    child.on("close", (code) => settle(() => reject(new Error(`the pasted line \`${line}\`\n  ended (${code}) before printing anything matching ${until}. It printed:\n${stdout}${stderr ? `\n(stderr)\n${stderr}` : ""}`))));
  });
}
