import { CommanderError } from "commander";
import { DomainError } from "../errors/light.js";
import { RemoteError } from "../client/index.js";
import { asInvoked } from "./invocation.js";
import { assembleProgram, programRoot } from "./program-root.js";
import { describeFailure } from "./report-failure.js";
import { describeDryRun, DryRunAnswered } from "./ctl/dry-run-option.js";
import { print, printJson } from "./output.js";

/** Prints a failure for the person at the terminal: what happened, then what to do, then each place involved. */
function report(error: unknown): number {
  if (error instanceof DryRunAnswered) {
    if (error.json) printJson(error.answer);
    else print(describeDryRun(error.answer));
    return 0;
  }
  if (error instanceof DomainError || error instanceof RemoteError) {
    process.stderr.write(`${asInvoked(describeFailure(error))}\n`);
    return 1;
  }
  if (error instanceof CommanderError) return error.exitCode;
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\nThis is a bug in llmgw; the stack below helps to report it.\n${error instanceof Error ? (error.stack ?? "") : ""}\n`);
  return 70;
}

// A ctl command line needs only ctl's branch: the processes' command modules load for the other command lines alone.
const processes = process.argv[2] === "ctl" ? undefined : (await import("./process-commands.js")).processCommands;
assembleProgram(programRoot(), processes)
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    process.exitCode = report(error);
  });
